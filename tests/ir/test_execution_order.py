"""Computation.execution_order: what runs when a computation runs, the one order DCE, the
interpreter and every backend share. A side effect reached only through a called computation (an
unused while loop whose body checks something) is part of it."""

from __future__ import annotations

import numpy as np

from hlort import Builder
from hlort.ir.opcodes import Opcode
from hlort.passes import DeadCodeElimination
from hlort.shape import TupleShape, array
from hlort.testing.programs import side_effect_in_unused_loop
from hlort.text.parser import parse_module

NESTED = """
HloModule nested

%check (a: f32[4]) -> () {
  %a = f32[4] parameter(0)
  ROOT %effect = () custom-call(f32[4] %a, f32[4] %a), custom_call_target="check.expect_eq",
    custom_call_has_side_effect=true
}

%pure (b: f32[4]) -> f32[4] {
  %b = f32[4] parameter(0)
  ROOT %n = f32[4] negate(f32[4] %b)
}

ENTRY %main (x: f32[4], y: f32[4], z: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %z = f32[4] parameter(2)
  %e = f32[4] exponential(f32[4] %y)
  %calls_check = () call(f32[4] %e), to_apply=%check
  %calls_pure = f32[4] call(f32[4] %y), to_apply=%pure
  %dead = f32[4] multiply(f32[4] %x, f32[4] %x)
  ROOT %add = f32[4] add(f32[4] %x, f32[4] %x)
}
"""


def names(instrs) -> list[str]:
    return [i.name for i in instrs]


def test_the_order_holds_the_root_parameters_and_nested_side_effects_operands_first():
    entry = parse_module(NESTED).entry
    order = entry.execution_order()
    assert names(order) == ["x", "y", "z", "e", "calls_check", "add"]
    position = {instr: k for k, instr in enumerate(order)}
    assert all(position[o] < position[i] for i in order for o in i.operands)


def test_an_unused_loop_whose_body_has_a_side_effect_is_in_the_order():
    entry = side_effect_in_unused_loop().entry
    order = entry.execution_order()
    assert [i.opcode for i in order if i.opcode is Opcode.WHILE] == [Opcode.WHILE]
    assert order[-1] is entry.root


def test_dce_keeps_exactly_the_execution_order():
    for module in (parse_module(NESTED), side_effect_in_unused_loop()):
        before = {c.name: names(c.execution_order()) for c in module.computations}
        DeadCodeElimination(remove_computations=False).run(module)
        after = {c.name: names(c.post_order()) for c in module.computations}
        assert after == before


def test_the_order_follows_changes_to_the_computation():
    b = Builder("grows")
    x = b.parameter(array("f32", (3,)))
    module = b.build(b.add(x, x))
    entry = module.entry
    assert len(entry.execution_order()) == 2
    b.custom_call(
        "check.expect_eq",
        [x, b.constant(np.zeros(3, np.float32))],
        TupleShape(()),
        has_side_effect=True,
    )
    assert [i.opcode for i in entry.execution_order()] == [
        Opcode.PARAMETER,
        Opcode.ADD,
        Opcode.CONSTANT,
        Opcode.CUSTOM_CALL,
    ]
