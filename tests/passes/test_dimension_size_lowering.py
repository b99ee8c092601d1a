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


REDUCE_BOUNDED = """HloModule reduce_bounded

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[8,4], n: s32[]) -> (f32[4], f32[4], f32[<=8]) {
  %x = f32[8,4]{1,0} parameter(0)
  %n = s32[] parameter(1)
  %set = f32[<=8,4]{1,0} set-dimension-size(f32[8,4]{1,0} %x, s32[] %n), dimensions={0}
  %neg = f32[<=8,4]{1,0} negate(f32[<=8,4]{1,0} %set)
  %zero = f32[] constant(0)
  %low = f32[] constant(-inf)
  %sum = f32[4]{0} reduce(f32[<=8,4]{1,0} %neg, f32[] %zero), dimensions={0}, to_apply=%add
  %top = f32[4]{0} reduce(f32[<=8,4]{1,0} %set, f32[] %low), dimensions={0}, to_apply=%max
  %rows = f32[<=8]{0} reduce(f32[<=8,4]{1,0} %set, f32[] %zero), dimensions={1}, to_apply=%add
  ROOT %t = (f32[4]{0}, f32[4]{0}, f32[<=8]{0}) tuple(%sum, %top, %rows)
}
"""


def test_reductions_over_a_bounded_dimension_skip_the_padding():
    # As XLA's dynamic padder: rows past the size are read as the reduction's init value.
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    module = parse_module(REDUCE_BOUNDED)
    want = (-x[:5].sum(0), x[:5].max(0), x[:5].sum(1))
    got = evaluate(module, [x, np.int32(5)])
    lowered = module.clone()
    assert DimensionSizeLowering().run(lowered)
    compiled = hlort.compile(REDUCE_BOUNDED, "cpu")(x, np.int32(5))
    for results in (got, evaluate(lowered, [x, np.int32(5)]), compiled):
        for a, b in zip(results, want, strict=True):
            np.testing.assert_array_equal(np.asarray(a)[: len(b)], b)  # past the size: padding
    empty = evaluate(module, [x, np.int32(0)])
    np.testing.assert_array_equal(empty[1], np.full(4, -np.inf, np.float32))
