"""Sort comparators with a transcendental (exp, log, tanh, sin, pow, atan2, erf, ...) on the GPU.

``plan_sort`` (hlort.codegen.llvm.sort_plan) refuses them: a compiled function may round a
value differently from the interpreter's NumPy one, which changes which elements tie and so the
permutation. The interpreter evaluates every such op in f64 (c128) and rounds once to the
result type (narrow floats through f32: interpreter/ops/float_rounding.py). This module rewrites
a copy of the comparator to say exactly that in HLO: each inexact op on f32, f16, bf16, float8
or c64 operands becomes ``convert`` to f64 (c128), the op there, and ``convert`` back (through
f32 for the narrow types). The rewritten comparator means the same to the interpreter; compiled,
it rounds the kernel's own f64 functions (hlort.codegen.llvm.float_math: within a few f64 ulp)
once to the operand type, which gives the interpreter's value unless the exact one lies within
those few f64 ulp of a rounding boundary of the narrow type (about 1e-8 of f32 values). A
comparator with an inexact op on f64 or c128 values is not planned (it stays a host fallback):
there the compiled functions' ulp bounds (float_math.py's table) would order neighbouring
values differently from the interpreter's NumPy functions. Nor is one that sees the sign bit of
a value computed from an inexact op (a TOTALORDER compare or a bitcast-convert of it): the sign
of a NaN result is NumPy's on the interpreter (x86: log(-1) and sin(inf) are -NaN) and the
kernel's own elsewhere (+NaN), so the two would order NaN rows differently.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.codegen.llvm.complex_values import involves_complex, is_element_dtype
from hlort.codegen.llvm.fused_emitter import supports_scalar_computation
from hlort.codegen.llvm.sort_plan import (
    EXACT_COMPARATOR_OPS,
    EXACT_COMPLEX_OPS,
    SortPlan,
    exact_comparator,
)
from hlort.dtypes import DType
from hlort.ir.attributes import ComparisonType
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import comparison_type_of
from hlort.shape import ArrayShape

_SCALAR_VIEWS = (Opcode.BROADCAST, Opcode.RESHAPE)


def _inexact(instr: Instruction) -> bool:
    op = instr.opcode
    if op in (Opcode.PARAMETER, Opcode.CONSTANT) or op in _SCALAR_VIEWS:
        return False
    if op not in EXACT_COMPARATOR_OPS:
        return True
    return op not in EXACT_COMPLEX_OPS and involves_complex(instr)


def _wide(dt: DType) -> DType:
    if dt.is_complex:
        return dtypes.C128
    return dtypes.F64 if dt.is_float else dt


def _wide_already(instr: Instruction) -> bool:
    types = [instr.shape.dtype] + [o.shape.dtype for o in instr.operands]
    return any((t.is_float or t.is_complex) and _wide(t) is t for t in types)


def compilable_comparator(comp: Computation) -> bool:
    """A scalar comparator (one pred result) of ops the GPU emitter compiles whose inexact ops
    are on values narrower than f64 (c128), so that widening makes them the interpreter's."""
    root = comp.root
    if root is None or not root.shape.is_array or root.shape.rank or not root.shape.dtype.is_pred:
        return False
    if not supports_scalar_computation(comp):
        return False
    if any(_inexact(i) and _wide_already(i) for i in comp.instructions):
        return False
    return not _sees_nan_sign(comp)


def _sees_nan_sign(comp: Computation) -> bool:
    """Whether a TOTALORDER compare or a bitcast-convert reads a float computed (through any
    ops) from an inexact one: it would see the sign of a NaN, which differs (module docstring)."""
    derived: set[Instruction] = set()
    for instr in comp.post_order():
        reads = any(o in derived for o in instr.operands)
        if reads and (
            instr.opcode is Opcode.BITCAST_CONVERT
            or instr.opcode is Opcode.COMPARE
            and comparison_type_of(instr) is ComparisonType.TOTALORDER
        ):
            return True
        dt = instr.shape.dtype
        if (dt.is_float or dt.is_complex) and (reads or _inexact(instr)):
            derived.add(instr)
    return False


def widened_comparator(comp: Computation) -> Computation:
    """A copy of ``comp`` whose inexact ops on narrow operands run in f64 (c128) and round as
    the interpreter's do (module docstring)."""
    out = Computation(f"{comp.name}_wide")
    env: dict[Instruction, Instruction] = {}

    def add(opcode: Opcode, dt: DType, operands, attrs=None) -> Instruction:
        return out.add_instruction(Instruction(opcode, ArrayShape(dt, ()), operands, attrs))

    def convert(value: Instruction, dt: DType) -> Instruction:
        return value if value.shape.dtype is dt else add(Opcode.CONVERT, dt, [value])

    for instr in comp.post_order():
        operands = [env[o] for o in instr.operands]
        result = instr.shape.dtype
        types = [result] + [o.shape.dtype for o in instr.operands]
        if not _inexact(instr) or all(_wide(t) is t for t in types):
            env[instr] = out.add_instruction(instr.clone_with(operands=operands))
            continue
        wide_ops = [convert(o, _wide(o.shape.dtype)) for o in operands]
        value = out.add_instruction(
            instr.clone_with(operands=wide_ops, shape=ArrayShape(_wide(result), ()))
        )
        if result.is_float and result.bits < 32:  # narrow floats round through f32
            value = convert(value, dtypes.F32)
        env[instr] = convert(value, result)
    out.set_root(env[comp.root])
    return out


def widened_network_plan(instr: Instruction) -> SortPlan | None:
    """The network plan of a sort on parameters whose comparator is compilable but not exact
    (so ``plan_sort`` refused it), with the widened comparator; None otherwise."""
    if instr.opcode is not Opcode.SORT:
        return None
    if not all(o.opcode is Opcode.PARAMETER for o in instr.operands):
        return None
    shapes = [o.shape for o in instr.operands]
    if any(not s.is_array or not is_element_dtype(s.dtype) or s.rank == 0 for s in shapes):
        return None
    comp = instr.attrs["to_apply"]
    if exact_comparator(comp) or not compilable_comparator(comp):
        return None
    return SortPlan(
        shapes[0].dims,
        instr.attrs["dimensions"][0],
        tuple(s.dtype for s in shapes),
        "network",
        comparator=widened_comparator(comp),
    )


__all__ = ["compilable_comparator", "widened_comparator", "widened_network_plan"]
