"""CSE: equal instructions merge (commutative operands, bitwise constants, equal callees)."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir.opcodes import Opcode
from hlort.passes import CommonSubexpressionElimination as CSE
from hlort.passes import DeadCodeElimination
from hlort.text.parser import parse_module

COMMUTATIVE = """
HloModule cse

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] add(f32[4] %x, f32[4] %y)
  %b = f32[4] add(f32[4] %y, f32[4] %x)
  %s1 = f32[4] subtract(f32[4] %x, f32[4] %y)
  %s2 = f32[4] subtract(f32[4] %y, f32[4] %x)
  %m1 = f32[4] multiply(f32[4] %a, f32[4] %s1)
  %m2 = f32[4] multiply(f32[4] %s1, f32[4] %b)
  ROOT %t = (f32[4], f32[4], f32[4]) tuple(f32[4] %m1, f32[4] %m2, f32[4] %s2)
}
"""

EXPECTED = """
HloModule cse

ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %a = f32[4] add(f32[4] %x, f32[4] %y)
  %s1 = f32[4] subtract(f32[4] %x, f32[4] %y)
  %m1 = f32[4] multiply(f32[4] %a, f32[4] %s1)
  %s2 = f32[4] subtract(f32[4] %y, f32[4] %x)
  ROOT %t = (f32[4], f32[4], f32[4]) tuple(f32[4] %m1, f32[4] %m1, f32[4] %s2)
}
"""


def test_golden_commutative(h):
    module = parse_module(COMMUTATIVE)
    before = module.clone()
    assert h.run_passes(module, [CSE()])
    h.assert_golden(module, EXPECTED)
    h.check_same_results(before, module)
    assert not h.run_passes(module, [CSE(), DeadCodeElimination()])


def _constants_module(values, dtype):
    b = Builder("consts")
    x = b.parameter(shape.array("f32", []))
    outs = [b.add(x, b.constant(np.array(v, dtype=dtype))) for v in values]
    return b.build(b.tuple(outs))


def test_constants_compare_bitwise(h):
    nan = np.float32(np.nan)
    other_nan = np.array(0x7FC00001, np.uint32).view(np.float32)
    module = _constants_module([0.0, -0.0, 0.0, nan, nan, other_nan], "float32")
    h.run_passes(module, [CSE()])
    assert h.count(module, Opcode.CONSTANT) == 4  # +0, -0, one NaN, the other NaN payload
    assert h.count(module, Opcode.ADD) == 4


def test_constants_of_different_types_never_merge(h):
    b = Builder("types")
    f = b.constant(np.float32(1.0))
    i = b.constant(np.array(np.float32(1.0).view(np.int32)))
    module = b.build(b.tuple([f, i, b.constant(np.float32(1.0))]))
    h.run_passes(module, [CSE()])
    assert h.count(module, Opcode.CONSTANT) == 2


def test_identical_reducers_merge_then_reductions(h):
    b = Builder("reducers")
    x = b.parameter(shape.array("f32", [8]))
    zero = b.constant(np.float32(0))
    r1 = b.reduce(x, zero, b.scalar_computation("add", "f32"), [0])
    r2 = b.reduce(x, zero, b.scalar_computation("add", "f32"), [0])
    module = b.build(b.add(r1, r2))
    assert len(module.computations) == 3
    before = module.clone()
    assert h.run_passes(module, [CSE()])
    assert len(module.computations) == 2
    assert h.count(module, Opcode.REDUCE) == 1
    h.check_same_results(before, module)


def test_side_effects_never_merge(h):
    module = parse_module("""
HloModule effects

ENTRY %main (x: f32[2]) -> (f32[2], f32[2]) {
  %x = f32[2] parameter(0)
  %a = f32[2] custom-call(f32[2] %x), custom_call_target="log",
    custom_call_has_side_effect=true
  %b = f32[2] custom-call(f32[2] %x), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %t = (f32[2], f32[2]) tuple(f32[2] %a, f32[2] %b)
}
""")
    assert not h.run_passes(module, [CSE()])
    assert h.count(module, Opcode.CUSTOM_CALL) == 2


def test_attributes_distinguish(h):
    module = parse_module("""
HloModule attrs

ENTRY %main (x: f32[2,3]) -> (f32[3,2], f32[2,3], f32[2,3]) {
  %x = f32[2,3] parameter(0)
  %t = f32[3,2] transpose(f32[2,3] %x), dimensions={1,0}
  %s1 = f32[2,3] slice(f32[2,3] %x), slice={[0:2], [0:3]}
  %r = f32[2,3] reverse(f32[2,3] %x), dimensions={1}
  ROOT %o = (f32[3,2], f32[2,3], f32[2,3]) tuple(f32[3,2] %t, f32[2,3] %s1, f32[2,3] %r)
}
""")
    assert not h.run_passes(module, [CSE()])
