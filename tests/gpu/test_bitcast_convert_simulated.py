"""Bitcast-converts on the GPU, on the host simulator against the interpreter bit for bit: every
conformance case with no host fallback. A width-changing one (or a complex-to-complex one) is
its operand's bytes as they lie, so it is a device Copy step between the kernels around it (which
never fuse it); equal-width real ones are elementwise kernels; s4/u4 ones, whose elements are
nibbles stored one per byte, are no byte view: the pipeline's sub-byte bitcast pass turns the
width-changing ones into shifts and masks, which are loop kernels (checked here both ways, with
every nibble and byte value)."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, check_case_without_fallback, simulated_program

from hlort.codegen.gpu.program import Copy
from hlort.interpreter.evaluator import evaluate
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "bitcast-convert"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case_runs_without_fallback(case):
    check_case_without_fallback(case, "bits")


BETWEEN_KERNELS = """HloModule b
ENTRY main {
  x = f32[6] parameter(0)
  e = f32[6] exponential(x)
  c = u16[6,2] bitcast-convert(e)
  one = u16[] constant(1)
  o = u16[6,2] broadcast(one), dimensions={}
  s = u16[6,2] add(c, o)
  r = u16[3,4] reshape(s)
  w = f64[3] bitcast-convert(r)
  ROOT n = f64[3] negate(w)
}
"""


def test_width_changes_between_kernels_are_device_copies():
    module = parse_module(BETWEEN_KERNELS)
    x = np.array([0.5, -0.0, np.nan, np.inf, -3.25, 1e-40], np.float32)
    expected = np.asarray(evaluate(module, [x]))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    copies = [s for s in program.steps if isinstance(s, Copy)]
    assert len(copies) == 2 and all(c.size == 24 for c in copies)
    (got,) = HostSimRunner(program).run([x])
    assert got.tobytes() == expected.tobytes()


SUB_BYTE = [
    ("s8[4]", "s4[4,2]"),
    ("u4[6,2]", "u8[6]"),
    ("s4[5,2]", "u8[5]"),
    ("s32[2]", "u4[2,8]"),
    ("u4[2,4]", "bf16[2]"),
    ("f32[]", "s4[8]"),
    ("s4[3,16]", "f64[3]"),
    ("s4[0,2]", "s8[0]"),
    ("s4[7]", "u4[7]"),
]


@pytest.mark.parametrize("source,result", SUB_BYTE)
def test_sub_byte_bitcasts_are_kernels_matching_the_interpreter(source, result):
    module = parse_module(
        f"HloModule b\nENTRY main {{\n  x = {source} parameter(0)\n"
        f"  ROOT c = {result} bitcast-convert(x)\n}}\n"
    )
    shape = module.entry.parameters[0].shape
    rng = np.random.default_rng(3)
    if shape.dtype.is_sub_byte_integer:
        lo, hi = (-8, 8) if shape.dtype.is_signed_integer else (0, 16)
        x = rng.integers(lo, hi, shape.dims).astype(shape.dtype.numpy)
    else:
        count = max(1, int(np.prod(shape.dims))) * shape.dtype.itemsize
        raw = np.resize(np.arange(256, dtype=np.uint8), count)  # every byte value
        x = rng.permutation(raw).view(shape.dtype.numpy).reshape(shape.dims)
    expected = np.asarray(evaluate(module, [x]))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    (got,) = HostSimRunner(program).run([x])
    assert got.dtype == expected.dtype and got.tobytes() == expected.tobytes()
