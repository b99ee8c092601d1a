"""Tuple simplification: gte of tuple, and tuples rebuilt from every element of one tuple."""

from __future__ import annotations

from hlort.ir.opcodes import Opcode
from hlort.passes import DeadCodeElimination, TupleSimplifier
from hlort.text.parser import parse_module

TUPLES = """
HloModule tuples

ENTRY %main (x: f32[2], y: s32[3], t: (f32[2], s32[3])) -> ((f32[2], s32[3]), f32[2]) {
  %x = f32[2] parameter(0)
  %y = s32[3] parameter(1)
  %t = (f32[2], s32[3]) parameter(2)
  %pair = (f32[2], s32[3]) tuple(f32[2] %x, s32[3] %y)
  %first = f32[2] get-tuple-element((f32[2], s32[3]) %pair), index=0
  %n = f32[2] negate(f32[2] %first)
  %g0 = f32[2] get-tuple-element((f32[2], s32[3]) %t), index=0
  %g1 = s32[3] get-tuple-element((f32[2], s32[3]) %t), index=1
  %same = (f32[2], s32[3]) tuple(f32[2] %g0, s32[3] %g1)
  ROOT %out = ((f32[2], s32[3]), f32[2]) tuple((f32[2], s32[3]) %same, f32[2] %n)
}
"""

EXPECTED = """
HloModule tuples

ENTRY %main (x: f32[2], y: s32[3], t: (f32[2], s32[3])) -> ((f32[2], s32[3]), f32[2]) {
  %x = f32[2] parameter(0)
  %y = s32[3] parameter(1)
  %t = (f32[2], s32[3]) parameter(2)
  %n = f32[2] negate(f32[2] %x)
  ROOT %out = ((f32[2], s32[3]), f32[2]) tuple((f32[2], s32[3]) %t, f32[2] %n)
}
"""


def test_golden(h):
    module = parse_module(TUPLES)
    before = module.clone()
    assert h.run_passes(module, [TupleSimplifier()])
    h.assert_golden(module, EXPECTED)
    h.check_same_results(before, module)


def test_idempotent(h):
    module = parse_module(TUPLES)
    h.run_passes(module, [TupleSimplifier()])
    assert not h.run_passes(module, [TupleSimplifier(), DeadCodeElimination()])


def test_partial_or_reordered_tuples_stay(h):
    module = parse_module("""
HloModule keep

ENTRY %main (t: (f32[2], f32[2], f32[2])) -> (f32[2], f32[2]) {
  %t = (f32[2], f32[2], f32[2]) parameter(0)
  %g0 = f32[2] get-tuple-element((f32[2], f32[2], f32[2]) %t), index=0
  %g1 = f32[2] get-tuple-element((f32[2], f32[2], f32[2]) %t), index=1
  ROOT %r = (f32[2], f32[2]) tuple(f32[2] %g1, f32[2] %g0)
}
""")
    assert not h.run_passes(module, [TupleSimplifier()])
    assert module.entry.root.opcode is Opcode.TUPLE
