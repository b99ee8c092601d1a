"""Interpreter functions, one per opcode, registered with :func:`evaluates`.

A function has the signature ``fn(ev, instr, *operand_values) -> value`` where ``ev`` is the
running :class:`~hlort.interpreter.evaluator.Evaluator` (for ``ev.call(computation, args)``),
``instr`` the instruction (attributes, result shape) and the values NumPy arrays (tuples for tuple
shapes, :class:`~hlort.shape.Token` for tokens). It returns a value of exactly ``instr.shape``: the
evaluator checks dtype and dims. Functions are vectorized NumPy: no Python loop over elements.
"""

from __future__ import annotations

from collections.abc import Callable

from hlort.ir.opcodes import Opcode

OpFunction = Callable[..., object]
_FUNCTIONS: dict[Opcode, OpFunction] = {}


def evaluates(*opcodes: Opcode) -> Callable[[OpFunction], OpFunction]:
    def register(fn: OpFunction) -> OpFunction:
        for op in opcodes:
            if op in _FUNCTIONS:
                raise RuntimeError(f"interpreter function for {op.value} registered twice")
            _FUNCTIONS[op] = fn
        return fn

    return register


def function_for(opcode: Opcode) -> OpFunction | None:
    _load()
    return _FUNCTIONS.get(opcode)


def _load() -> None:
    import hlort.interpreter.ops  # noqa: F401  (registers every function)
