"""What a compiled sort or top-k does, decided once at compile time from the instruction.

The result must be the interpreter's bit for bit (``interpreter/ops/sort.py``), so the kernel
follows the interpreter's own choice of algorithm:

- ``"radix"``: the comparator is lexicographic over strict compares of operand pairs
  (``ir.patterns.lexicographic_comparator``) with keys the interpreter's ``order_key`` accepts.
  The interpreter then sorts stably by integer keys (``np.lexsort``); the kernel maps each key to
  an unsigned integer that orders the same way and sorts records "keys, then position" with a
  stable LSD radix sort (any stable sort by those keys gives the same permutation). top-k is the
  same with one key: TOTALORDER for floats, reversed when ``largest``.
- ``"network"``: any other comparator runs the interpreter's Batcher odd-even merge network
  with its tie rule, one compare-exchange at a time, so even a comparator that is not a strict
  weak order (NaN under FLOAT compares) gives the interpreter's permutation. Operands of any
  element type qualify, complex included (JAX's complex comparators compare ``real`` and
  ``imag`` parts), as do comparators made of ops whose compiled result is the interpreter's
  bit for bit: exact ones and the correctly rounded ``sqrt`` and ``rsqrt`` (both sides compute
  ``1 / sqrt`` in f64 and round once to the operand type).

Not planned, so on the interpreter FALLBACK: comparators with a transcendental (exp, log, tanh,
sin, pow, atan2, cbrt, erf, ...). The interpreter computes those with NumPy's f64 functions,
which are not correctly rounded and differ between machines (SVML on AVX-512 CPUs, libm
elsewhere); a compiled approximation may round some value differently, which changes which
elements tie and so the permutation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hlort.codegen.llvm.complex_values import involves_complex, is_element_dtype
from hlort.codegen.llvm.elemental import can_emit
from hlort.codegen.llvm.llvm_types import is_compiled_dtype
from hlort.dtypes import DType
from hlort.ir.attributes import ComparisonType
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import lexicographic_comparator

# Comparator ops whose compiled result equals the interpreter's bit for bit.
EXACT_COMPARATOR_OPS = frozenset(
    {
        Opcode.PARAMETER,
        Opcode.CONSTANT,
        Opcode.COMPARE,
        Opcode.SELECT,
        Opcode.AND,
        Opcode.OR,
        Opcode.XOR,
        Opcode.NOT,
        Opcode.BITCAST_CONVERT,
        Opcode.CONVERT,
        Opcode.NEGATE,
        Opcode.ABS,
        Opcode.ADD,
        Opcode.SUBTRACT,
        Opcode.MULTIPLY,
        Opcode.DIVIDE,
        Opcode.MAXIMUM,
        Opcode.MINIMUM,
        Opcode.SHIFT_LEFT,
        Opcode.SHIFT_RIGHT_LOGICAL,
        Opcode.SHIFT_RIGHT_ARITHMETIC,
        Opcode.CLAMP,
        Opcode.SIGN,
        Opcode.IS_FINITE,
        Opcode.COPY,
        Opcode.FLOOR,
        Opcode.CEIL,
        Opcode.POPCNT,
        Opcode.ROUND_NEAREST_AFZ,
        Opcode.ROUND_NEAREST_EVEN,
        Opcode.CLZ,
        Opcode.REMAINDER,
        Opcode.REDUCE_PRECISION,
        Opcode.SQRT,
        Opcode.RSQRT,
        Opcode.REAL,
        Opcode.IMAG,
        Opcode.COMPLEX,
    }
)
# ... of those, the ones that touch complex values exactly (no c128 abs, no transcendentals).
EXACT_COMPLEX_OPS = frozenset(
    {
        Opcode.PARAMETER,
        Opcode.CONSTANT,
        Opcode.COMPARE,
        Opcode.SELECT,
        Opcode.CONVERT,
        Opcode.NEGATE,
        Opcode.ADD,
        Opcode.SUBTRACT,
        Opcode.MULTIPLY,
        Opcode.DIVIDE,
        Opcode.COPY,
        Opcode.REAL,
        Opcode.IMAG,
        Opcode.COMPLEX,
    }
)


@dataclass(frozen=True)
class KeyField:
    """One radix key: operand ``operand`` mapped to an unsigned ``bits``-wide integer."""

    operand: int
    dtype: DType
    canonical: bool  # floats: -0.0 -> +0.0 and every NaN -> one NaN (FLOAT compares, JAX)
    descending: bool

    @property
    def bits(self) -> int:
        return max(8, self.dtype.bits)


@dataclass(frozen=True)
class SortPlan:
    dims: tuple[int, ...]
    dimension: int  # sorted dimension
    dtypes: tuple[DType, ...]  # operands (all are outputs too)
    strategy: str  # "radix" | "network"
    keys: tuple[KeyField, ...] = ()  # radix: most significant first
    comparator: Computation | None = None  # network
    top_k: int | None = None  # top-k: outputs are the first k of each row, then positions

    @property
    def n(self) -> int:
        return self.dims[self.dimension]

    @property
    def inner(self) -> int:
        """Distance between neighbours along the sorted dimension."""
        return math.prod(self.dims[self.dimension + 1 :])

    @property
    def rows(self) -> int:
        return math.prod(self.dims) // self.n if self.n else 0


def _interpreter_key(dt: DType, comparison_type: ComparisonType, canonical: bool) -> bool:
    """Whether the interpreter's fast path sorts by this key (its own decision, reused)."""
    from hlort.interpreter.ops.sort import order_key

    return order_key(np.zeros(1, dt.numpy), comparison_type, canonical) is not None


def _radix_keys(comp: Computation, dtypes_: tuple[DType, ...]) -> tuple[KeyField, ...] | None:
    keys = lexicographic_comparator(comp)
    if keys is None:
        return None
    fields = []
    for key in keys:
        dt = dtypes_[key.operand]
        if not _interpreter_key(dt, key.comparison_type, key.canonical):
            return None
        canonical = dt.is_float and (key.canonical or key.comparison_type is ComparisonType.FLOAT)
        fields.append(KeyField(key.operand, dt, canonical, key.descending))
    return tuple(fields)


def exact_comparator(comp: Computation) -> bool:
    """A scalar comparator of exactly rounded, compilable ops returning one pred."""
    root = comp.root
    if root is None or not root.shape.is_array or root.shape.rank or not root.shape.dtype.is_pred:
        return False
    for instr in comp.instructions:
        shape = instr.shape
        if not shape.is_array or shape.rank or not is_element_dtype(shape.dtype):
            return False
        op = instr.opcode
        if op in (Opcode.BROADCAST, Opcode.RESHAPE) and instr.operands[0].shape.rank == 0:
            continue
        if op not in EXACT_COMPARATOR_OPS:
            return False
        if op not in EXACT_COMPLEX_OPS and involves_complex(instr):
            return False
        if op not in (Opcode.PARAMETER, Opcode.CONSTANT) and not can_emit(instr):
            return False
    return True


def _operands_are_parameters(instr: Instruction) -> bool:
    return all(o.opcode is Opcode.PARAMETER for o in instr.operands)


def plan_sort(instr: Instruction) -> SortPlan | None:
    """The plan for a sort or top-k instruction on parameters, or None (FALLBACK)."""
    if not _operands_are_parameters(instr):
        return None
    if instr.opcode is Opcode.TOPK:
        x = instr.operands[0].shape
        if not x.is_array or not is_compiled_dtype(x.dtype) or x.rank == 0:
            return None
        descending = bool(instr.attrs.get("largest", True))
        key = KeyField(0, x.dtype, False, descending)
        return SortPlan(
            x.dims, x.rank - 1, (x.dtype,), "radix", (key,), top_k=int(instr.attrs["k"])
        )
    if instr.opcode is not Opcode.SORT:
        return None
    shapes = [o.shape for o in instr.operands]
    if any(not s.is_array or not is_element_dtype(s.dtype) or s.rank == 0 for s in shapes):
        return None
    dtypes_ = tuple(s.dtype for s in shapes)
    comp = instr.attrs["to_apply"]
    dimension = instr.attrs["dimensions"][0]
    keys = _radix_keys(comp, dtypes_)
    if keys is not None:
        return SortPlan(shapes[0].dims, dimension, dtypes_, "radix", keys)
    if exact_comparator(comp):
        return SortPlan(shapes[0].dims, dimension, dtypes_, "network", comparator=comp)
    return None
