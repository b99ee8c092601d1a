"""Interpreter functions, one per opcode, registered with :func:`evaluates`.

A function has the signature ``fn(ev, instr, *operand_values) -> value`` where ``ev`` is the
running :class:`~hlort.interpreter.evaluator.Evaluator` (for ``ev.call(computation, args)``),
``instr`` the instruction (attributes, result shape) and the values NumPy arrays (tuples for tuple
shapes, :class:`~hlort.shape.Token` for tokens). It returns a value of exactly ``instr.shape``: the
evaluator checks dtype and dims. Functions are vectorized NumPy: no Python loop over elements.
"""

from __future__ import annotations

from collections.abc import Callable

from hlort.interpreter.sub_byte import adapt, needs_adapter
from hlort.ir.op_registry import OpRegistry
from hlort.ir.opcodes import Opcode

OpFunction = Callable[..., object]
OP_FUNCTIONS: OpRegistry[Opcode, OpFunction] = OpRegistry(
    "interpreter function", modules=("hlort.interpreter.ops",)
)


def evaluates(*opcodes: Opcode) -> Callable[[OpFunction], OpFunction]:
    """Register the decorated function as the interpreter function of ``opcodes``."""
    return OP_FUNCTIONS.register(*opcodes)


def function_for(opcode: Opcode) -> OpFunction | None:
    """The registered function of ``opcode``: it sees operands as they are, so callers that run
    it on an instruction's values use :func:`function_for_instruction`."""
    return OP_FUNCTIONS.get(opcode)


def function_for_instruction(instr) -> OpFunction | None:
    """The function that evaluates ``instr``: its opcode's, computing in bytes when ``instr``
    works on s4/u4 values (sub_byte.py)."""
    fn = OP_FUNCTIONS.get(instr.opcode)
    if fn is not None and needs_adapter(instr):
        return adapt(instr, fn)
    return fn
