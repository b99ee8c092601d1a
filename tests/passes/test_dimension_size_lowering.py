"""Dimension-size lowering: bounded dynamism (set/get-dimension-size) becomes static code."""

from pathlib import Path

import numpy as np

import hlort
from hlort.interpreter import evaluate
from hlort.ir.opcodes import Opcode
from hlort.passes.dimension_size_lowering import DimensionSizeLowering
from hlort.text import parse_module

SAMPLE = Path(__file__).resolve().parents[1] / "text" / "samples" / "bounded_dims.hlo"


def _opcodes(module) -> set[Opcode]:
    return {i.opcode for c in module.computations for i in c.instructions}


def test_the_ops_become_their_sizes_and_the_padded_data():
    module = parse_module(SAMPLE.read_text())
    x = np.arange(32, dtype=np.float32).reshape(8, 4) / 8
    before = evaluate(module, [x, np.int32(5)])
    lowered = module.clone()
    assert DimensionSizeLowering().run(lowered)
    assert not _opcodes(lowered) & {Opcode.SET_DIMENSION_SIZE, Opcode.GET_DIMENSION_SIZE}
    after = evaluate(lowered, [x, np.int32(5)])
    np.testing.assert_allclose(before[0], np.exp(x), rtol=1e-6)  # the padded data, kept
    assert (int(before[1]), int(before[2])) == (5, 4)
    for a, b in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not DimensionSizeLowering().run(lowered)  # idempotent


def test_a_bounded_program_runs_on_cpu_as_on_the_interpreter():
    exe = hlort.compile(SAMPLE.read_text(), "cpu")
    x = np.ones((8, 4), np.float32)
    data, size0, size1 = exe(x, np.int32(3))
    np.testing.assert_allclose(data, np.exp(x), rtol=1e-6)  # cpu's exp: within 1 ulp-ish
    assert (int(size0), int(size1)) == (3, 4)
