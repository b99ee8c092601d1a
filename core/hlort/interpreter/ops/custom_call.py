"""Interpreter: custom-call, dispatched to its target's ``evaluate_fn``
(:mod:`hlort.ir.custom_calls`).

An unregistered target raises UNIMPLEMENTED naming it and how to register it, and so does a
call whose layout constraints the target would not honour (:mod:`hlort.ir.custom_call_layouts`).
"""

from __future__ import annotations

from hlort.errors import HlortError
from hlort.interpreter.registry import evaluates
from hlort.ir.custom_call_layouts import check_custom_call_layouts
from hlort.ir.custom_calls import evaluator_for
from hlort.ir.opcodes import Opcode


@evaluates(Opcode.CUSTOM_CALL)
def _custom_call(ev, instr, *operands):
    target = instr.attrs["custom_call_target"]
    check_custom_call_layouts(instr)  # UNIMPLEMENTED for a layout the target would get wrong
    fn = evaluator_for(target)
    try:
        return fn(ev, instr, *operands)
    except HlortError:
        raise
    except Exception as err:  # a user's target failing is reported with the call site
        raise HlortError(
            f"{instr.name}: custom-call target {target!r} raised {type(err).__name__}: {err}"
        ) from err
