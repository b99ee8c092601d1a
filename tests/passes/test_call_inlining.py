"""Call inlining: calls become copies of their callees, nested calls included."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir.opcodes import Opcode
from hlort.passes import CallInliner, DeadCodeElimination
from hlort.text.parser import parse_module

CALLS = """
HloModule calls

%square (a: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  ROOT %m = f32[4] multiply(f32[4] %a, f32[4] %a)
}

%outer (p: f32[4], q: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  %q = f32[4] parameter(1)
  %sq = f32[4] call(f32[4] %p), to_apply=%square
  ROOT %s = f32[4] add(f32[4] %sq, f32[4] %q)
}

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %c1 = f32[4] call(f32[4] %x, f32[4] %y), to_apply=%outer
  ROOT %c2 = f32[4] call(f32[4] %c1, f32[4] %x), to_apply=%outer
}
"""

EXPECTED = """
HloModule calls

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %m = f32[4] multiply(f32[4] %x, f32[4] %x)
  %y = f32[4] parameter(1)
  %s = f32[4] add(f32[4] %m, f32[4] %y)
  %m2 = f32[4] multiply(f32[4] %s, f32[4] %s)
  ROOT %s2 = f32[4] add(f32[4] %m2, f32[4] %x)
}
"""


def test_golden_nested_calls(h):
    module = parse_module(CALLS)
    before = module.clone()
    assert h.run_passes(module, [CallInliner(), DeadCodeElimination()])
    h.assert_golden(module, EXPECTED)
    assert h.count(module, Opcode.CALL) == 0
    h.check_same_results(before, module)


def test_idempotent(h):
    module = parse_module(CALLS)
    h.run_passes(module, [CallInliner()])
    assert not h.run_passes(module, [CallInliner()])


def test_root_call_returning_its_parameter(h):
    b = Builder("identity_call")
    sub = b.sub("ident")
    p = sub.parameter(shape.array("s32", [3]))
    ident = sub.finish(p)
    x = b.parameter(shape.array("s32", [3]))
    module = b.build(b.call(ident, [x]))
    assert h.run_passes(module, [CallInliner(), DeadCodeElimination()])
    assert module.entry.root is module.entry.parameters[0]
    args = [np.arange(3, dtype=np.int32)]
    from hlort.interpreter import evaluate

    np.testing.assert_array_equal(evaluate(module, args), args[0])


def test_side_effects_of_the_callee_survive(h):
    module = parse_module("""
HloModule effects

%log (a: f32[2]) -> f32[2] {
  %a = f32[2] parameter(0)
  %p = f32[2] custom-call(f32[2] %a), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %n = f32[2] negate(f32[2] %a)
}

ENTRY %main (x: f32[2]) -> f32[2] {
  %x = f32[2] parameter(0)
  %c = f32[2] call(f32[2] %x), to_apply=%log
  ROOT %r = f32[2] abs(f32[2] %x)
}
""")
    h.run_passes(module, [CallInliner(), DeadCodeElimination()])
    assert h.count(module, Opcode.CUSTOM_CALL) == 1
    assert h.count(module, Opcode.CALL) == 0
