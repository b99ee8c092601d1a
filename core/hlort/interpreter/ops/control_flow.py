"""Interpreter: while, conditional, call, fusion, tuple, get-tuple-element, opt-barrier, after-all.

Called computations run through ``ev.call``, which caches each computation's evaluation order, so a
while loop costs one Python iteration per trip with vectorized bodies.
"""

from __future__ import annotations

from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode
from hlort.shape import Token


@evaluates(Opcode.WHILE)
def _while(ev, instr, state):
    condition = instr.attrs["condition"]
    body = instr.attrs["body"]
    while bool(ev.call(condition, [state])):
        state = ev.call(body, [state])
    return state


@evaluates(Opcode.CONDITIONAL)
def _conditional(ev, instr, selector, *branch_operands):
    """A pred selects [true, false]; an s32 index out of [0, N) runs the last branch, as XLA."""
    branches = instr.attrs["branch_computations"]
    if selector.dtype == bool:
        index = 0 if bool(selector) else 1
    else:
        index = int(selector)
        if not 0 <= index < len(branches):
            index = len(branches) - 1
    return ev.call(branches[index], [branch_operands[index]])


@evaluates(Opcode.CALL)
def _call(ev, instr, *operands):
    return ev.call(instr.attrs["to_apply"], list(operands))


@evaluates(Opcode.FUSION)
def _fusion(ev, instr, *operands):
    return ev.call(instr.attrs["calls"], list(operands))


@evaluates(Opcode.TUPLE)
def _tuple(ev, instr, *elements):
    return tuple(elements)


@evaluates(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(ev, instr, value):
    return value[instr.attrs["index"]]


@evaluates(Opcode.OPTIMIZATION_BARRIER)
def _optimization_barrier(ev, instr, value):
    return value


@evaluates(Opcode.AFTER_ALL)
def _after_all(ev, instr, *tokens):
    return Token()
