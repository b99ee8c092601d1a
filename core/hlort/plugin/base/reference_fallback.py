"""The reference interpreter as a backend's kernel of last resort, checked at compile time.

A backend that runs an instruction on the interpreter (the template's kernels, the interpreter
platform, a host op) asks here, while compiling, whether the interpreter can: a missing
function or a custom call whose target has no reference implementation then fails the compile
with UNIMPLEMENTED naming it, never the first execution.
"""

from __future__ import annotations

from collections.abc import Callable

from hlort.interpreter.registry import function_for_instruction
from hlort.ir.custom_calls import evaluator_for
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


def reference_function(instr: Instruction) -> Callable[..., object] | None:
    """The interpreter function for ``instr`` (``fn(evaluator, instr, *operand_values)``), or
    None when the interpreter has none. For a custom call it also checks the target:
    UNIMPLEMENTED (naming the target and how to register it) when it cannot be evaluated."""
    function = function_for_instruction(instr)
    if function is not None and instr.opcode is Opcode.CUSTOM_CALL:
        evaluator_for(instr.attrs.get("custom_call_target", ""))
    return function
