"""DCE: dead instructions and unreachable computations go; side effects and parameters stay."""

from __future__ import annotations

from hlort.ir.opcodes import Opcode
from hlort.passes import DeadCodeElimination
from hlort.text.parser import parse_module

DEAD = """
HloModule dead

%unused (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %n = f32[] negate(f32[] %a)
}

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %dead1 = f32[4] multiply(f32[4] %x, f32[4] %x)
  %dead2 = f32[4] exponential(f32[4] %dead1)
  %effect = f32[4] custom-call(f32[4] %y), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %add = f32[4] add(f32[4] %x, f32[4] %x)
}
"""

EXPECTED = """
HloModule dead

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %effect = f32[4] custom-call(f32[4] %y), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %add = f32[4] add(f32[4] %x, f32[4] %x)
}
"""


def test_golden(h):
    module = parse_module(DEAD)
    assert h.run_passes(module, [DeadCodeElimination()])
    h.assert_golden(module, EXPECTED)
    assert [c.name for c in module.computations] == ["main"]


def test_idempotent(h):
    module = parse_module(DEAD)
    h.run_passes(module, [DeadCodeElimination()])
    assert not h.run_passes(module, [DeadCodeElimination()])


def test_unused_parameters_stay(h):
    module = parse_module("""
HloModule p
ENTRY %main (x: f32[2], y: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %y = f32[2] parameter(1)
  ROOT %n = f32[2] negate(f32[2] %x)
}
""")
    assert not h.run_passes(module, [DeadCodeElimination()])
    assert len(module.entry.parameters) == 2


def test_loop_with_side_effect_in_body_stays(h):
    module = parse_module("""
HloModule loop

%body (s: (s32[], f32[2])) -> (s32[], f32[2]) {
  %s = (s32[], f32[2]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[2]) %s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one)
  %v = f32[2] get-tuple-element((s32[], f32[2]) %s), index=1
  %p = f32[2] custom-call(f32[2] %v), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %t = (s32[], f32[2]) tuple(s32[] %next, f32[2] %v)
}

%cond (s: (s32[], f32[2])) -> pred[] {
  %s = (s32[], f32[2]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[2]) %s), index=0
  %n = s32[] constant(3)
  ROOT %lt = pred[] compare(s32[] %i, s32[] %n), direction=LT
}

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[2]) tuple(s32[] %zero, f32[2] %x)
  %w = (s32[], f32[2]) while((s32[], f32[2]) %init), condition=%cond, body=%body
  ROOT %r = f32[2] negate(f32[2] %x)
}
""")
    assert not h.run_passes(module, [DeadCodeElimination()])
    assert h.count(module, Opcode.WHILE) == 1
    assert len(module.computations) == 3


def test_dead_code_inside_called_computations(h):
    module = parse_module("""
HloModule inner

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  %junk = f32[] multiply(f32[] %a, f32[] %b)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4] %x, f32[] %z), dimensions={0}, to_apply=%add
}
""")
    before = module.clone()
    assert h.run_passes(module, [DeadCodeElimination()])
    assert h.count(module, Opcode.MULTIPLY, module.computation("add")) == 0
    h.check_same_results(before, module)
