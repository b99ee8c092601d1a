"""Scalar computations (scatter combiners, select-and-scatter's select and scatter) made flat.

The kernels inline such a computation with ``emit_scalar_computation``, which takes elementwise
scalar code only. A combiner may also hold a ``map`` or ``call`` on scalars (their computation
is the value), and tuples read back by ``get-tuple-element``, through an ``opt-barrier`` or not
(an identity on values). ``flat_scalar_code`` inlines those into a copy, so the same kernels
compute it: the copy means the same to the interpreter, op for op.
"""

from __future__ import annotations

from hlort.codegen.llvm.fused_emitter import supports_scalar_computation
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import TupleShape

_INLINED = (Opcode.MAP, Opcode.CALL)


class _NotFlat(Exception):
    pass


def _inline(out: Computation, comp: Computation, args: list) -> object:
    """The value of ``comp``'s root on ``args``: an instruction of ``out``, or a tuple of them."""
    env: dict[Instruction, object] = {}
    for instr in comp.post_order():
        op = instr.opcode
        values = [env[o] for o in instr.operands]
        if op is Opcode.PARAMETER:
            env[instr] = args[instr.parameter_number]
        elif op is Opcode.TUPLE:
            env[instr] = tuple(values)
        elif op is Opcode.GET_TUPLE_ELEMENT and isinstance(values[0], tuple):
            env[instr] = values[0][instr.attrs["index"]]
        elif op is Opcode.OPTIMIZATION_BARRIER:
            env[instr] = values[0]
        elif op in _INLINED and all(o.shape.is_array and not o.shape.rank for o in instr.operands):
            env[instr] = _inline(out, instr.attrs["to_apply"], values)
        elif any(isinstance(v, tuple) for v in values) or instr.called_computations():
            raise _NotFlat(op.value)
        else:
            env[instr] = out.add_instruction(instr.clone_with(operands=values))
    return env[comp.root]


def flat_scalar_code(comp: Computation) -> Computation | None:
    """``comp`` when the kernels inline it as it is, else a flat copy they inline, or None."""
    if supports_scalar_computation(comp):
        return comp
    out = Computation(f"{comp.name}_flat")
    params = [
        out.add_instruction(p.clone_with(operands=()))
        for p in sorted(comp.parameters, key=lambda p: p.parameter_number)
    ]
    try:
        root = _inline(out, comp, params)
    except _NotFlat:
        return None
    if isinstance(root, tuple):
        if any(isinstance(v, tuple) for v in root):
            return None
        root = out.add_instruction(
            Instruction(Opcode.TUPLE, TupleShape(tuple(v.shape for v in root)), list(root))
        )
    out.set_root(root)
    return out if supports_scalar_computation(out) else None


__all__ = ["flat_scalar_code"]
