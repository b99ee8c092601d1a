"""Recognisers for common called computations (reducers, scatter combiners, comparators).

Interpreters and backends use them to pick a fast path (``np.add.at`` for a scatter-add, a
vectorized reduction for an ``add`` reducer) instead of calling the computation element by element.
Each function answers one narrow question about a computation's structure and never raises.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hlort.ir.attributes import ComparisonDirection, ComparisonType, default_comparison_type
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


def parameter_number_of(instr: Instruction) -> int | None:
    """The parameter number when ``instr`` is a parameter, else None."""
    return instr.parameter_number if instr.opcode is Opcode.PARAMETER else None


def is_overwrite(comp: Computation) -> bool:
    """True when ``comp`` takes 2N parameters and returns parameters N..2N-1 in order.

    That is scatter's "replace" combiner: the result ignores the current values.
    """
    params = comp.parameters
    if comp.root is None or not params or len(params) % 2:
        return False
    n = len(params) // 2
    root = comp.root
    if n == 1 and root.opcode is not Opcode.TUPLE:
        return parameter_number_of(root) == 1
    if root.opcode is not Opcode.TUPLE or len(root.operands) != n:
        return False
    return all(parameter_number_of(op) == n + i for i, op in enumerate(root.operands))


def binary_op_of(comp: Computation) -> Opcode | None:
    """The opcode when ``comp`` is ``(p0, p1) -> op(p0, p1)`` on scalars, else None.

    ``op(p1, p0)`` also matches when the op is commutative. Ops with attributes (compare) never
    match, since the opcode alone would not say what they compute.
    """
    params = comp.parameters
    root = comp.root
    if root is None or len(params) != 2 or len(root.operands) != 2 or root.attrs:
        return None
    if not root.opcode.info.elementwise or root.opcode.info.arity != 2:
        return None
    if any(not p.shape.is_array or p.shape.dims for p in params):
        return None
    numbers = tuple(parameter_number_of(op) for op in root.operands)
    if numbers == (0, 1) or (numbers == (1, 0) and root.opcode.info.commutative):
        return root.opcode
    return None


def is_scalar_elementwise(comp: Computation) -> bool:
    """True when every instruction is a scalar parameter or constant, an elementwise op, or a
    tuple at the root: such a computation can be evaluated on whole arrays at once."""
    for instr in comp.instructions:
        op = instr.opcode
        if op is Opcode.TUPLE:
            if instr is not comp.root:
                return False
            continue
        if op is Opcode.MAP or instr.called_computations():
            return False
        if not (op in (Opcode.PARAMETER, Opcode.CONSTANT) or instr.is_elementwise):
            return False
        if not instr.shape.is_array or instr.shape.dims:
            return False
    return True


# -- reducers (reduce, reduce-window, select-and-scatter's scatter) ------------------------------

REDUCER_OPCODES = frozenset(
    {Opcode.ADD, Opcode.MULTIPLY, Opcode.MAXIMUM, Opcode.MINIMUM, Opcode.AND, Opcode.OR, Opcode.XOR}
)


def binary_reducer_opcode(comp: Computation) -> Opcode | None:
    """The opcode when ``comp`` is ``(a, b) -> op(a, b)`` for an associative, commutative op
    with a NumPy reduction (add, multiply, maximum, minimum, and, or, xor), else None."""
    op = binary_op_of(comp)
    if op not in REDUCER_OPCODES:
        return None
    dtypes_ = {p.shape.dtype for p in comp.parameters} | {comp.root.shape.dtype}
    return op if len(dtypes_) == 1 else None


def variadic_reducer_opcodes(comp: Computation) -> tuple[Opcode, ...] | None:
    """For a reducer of N accumulators (2N scalar parameters) whose result i is
    ``op_i(p_i, p_{N+i})`` with no cross terms: the N opcodes, else None.

    N = 1 is :func:`binary_reducer_opcode`, also when the root is a 1-tuple.
    """
    params = comp.parameters
    root = comp.root
    if root is None or not params or len(params) % 2:
        return None
    if any(not p.shape.is_array or p.shape.dims for p in params):
        return None
    n = len(params) // 2
    outputs = list(root.operands) if root.opcode is Opcode.TUPLE else [root]
    if len(outputs) != n:
        return None
    ops = []
    for i, out in enumerate(outputs):
        if out.opcode not in REDUCER_OPCODES or len(out.operands) != 2:
            return None
        numbers = {parameter_number_of(o) for o in out.operands}
        if numbers != {i, n + i}:
            return None
        if not (out.shape == params[i].shape == params[n + i].shape):
            return None
        ops.append(out.opcode)
    return tuple(ops)


# -- sort comparators ----------------------------------------------------------------------------


class SortKey(NamedTuple):
    """One key of a comparator: operand ``operand`` compared as ``compare(lhs, rhs, direction)``
    under ``comparison_type``; LT sorts ascending, GT descending. ``canonical``: both sides are
    first mapped -0.0 -> +0.0 and any NaN -> +NaN (JAX's ``_canonicalize_float_for_sort``)."""

    operand: int
    direction: ComparisonDirection
    comparison_type: ComparisonType
    canonical: bool = False

    @property
    def descending(self) -> bool:
        return self.direction is ComparisonDirection.GT


def comparison_type_of(compare: Instruction) -> ComparisonType:
    """The comparison type a compare instruction uses (explicit, or the default of its type)."""
    explicit = compare.attrs.get("comparison_type")
    if explicit is not None:
        return ComparisonType(explicit)
    return default_comparison_type(compare.operands[0].shape.dtype)


_SWAPPED = {
    ComparisonDirection.LT: ComparisonDirection.GT,
    ComparisonDirection.GT: ComparisonDirection.LT,
}


def scalar_constant_value(instr: Instruction):
    """The value of a scalar constant (or a broadcast of one to a scalar), else None."""
    if instr.opcode is Opcode.BROADCAST and instr.shape.is_array and not instr.shape.dims:
        instr = instr.operands[0]
    if instr.opcode is not Opcode.CONSTANT or not instr.shape.is_array or instr.shape.dims:
        return None
    return instr.literal


def _compares(instr: Instruction, direction: ComparisonDirection) -> bool:
    return (
        instr.opcode is Opcode.COMPARE
        and ComparisonDirection(instr.attrs.get("direction")) is direction
    )


def canonicalized_float_parameter(instr: Instruction) -> int | None:
    """p when ``instr`` is ``select(ne(p, p), NaN, select(eq(p, 0), 0, p))`` with p a float
    parameter: JAX's sort-key canonicalization (all zeros +0.0, all NaNs one +NaN)."""
    if instr.opcode is not Opcode.SELECT:
        return None
    is_nan, nan, inner = instr.operands
    if not _compares(is_nan, ComparisonDirection.NE) or inner.opcode is not Opcode.SELECT:
        return None
    p = parameter_number_of(is_nan.operands[0])
    if p is None or is_nan.operands[1] is not is_nan.operands[0]:
        return None
    is_zero, zero, value = inner.operands
    if parameter_number_of(value) != p or not _compares(is_zero, ComparisonDirection.EQ):
        return None
    compared = [parameter_number_of(o) for o in is_zero.operands]
    other = is_zero.operands[1] if compared[0] == p else is_zero.operands[0]
    if p not in compared or not _is_positive_zero(other) or not _is_positive_zero(zero):
        return None
    nan_value = scalar_constant_value(nan)
    if nan_value is None or not np.isnan(nan_value.astype(np.float64)):
        return None
    return p


def _is_positive_zero(instr: Instruction) -> bool:
    value = scalar_constant_value(instr)
    if value is None or value.dtype.kind in "biuc":
        return False
    wide = value.astype(np.float64)
    return bool(wide == 0 and not np.signbit(wide))


def _key_source(instr: Instruction) -> tuple[int, bool] | None:
    """(parameter number, canonicalized) for a parameter or a canonicalized parameter."""
    p = parameter_number_of(instr)
    if p is not None:
        return p, False
    p = canonicalized_float_parameter(instr)
    return (p, True) if p is not None else None


def _compared_pair(instr: Instruction) -> tuple[int, bool, bool] | None:
    """(k, swapped, canonical) when ``instr`` compares lhs_k and rhs_k (parameters 2k and 2k+1),
    both plain or both canonicalized."""
    if instr.opcode is not Opcode.COMPARE:
        return None
    a, b = (_key_source(o) for o in instr.operands)
    if a is None or b is None or a[1] != b[1] or a[0] // 2 != b[0] // 2 or a[0] == b[0]:
        return None
    return a[0] // 2, a[0] % 2 == 1, a[1]


def _strict_key(instr: Instruction) -> SortKey | None:
    """A strict LT/GT compare of one operand pair, normalised to lhs-first."""
    pair = _compared_pair(instr)
    if pair is None:
        return None
    direction = ComparisonDirection(instr.attrs.get("direction"))
    if direction not in _SWAPPED:
        return None
    k, swapped, canonical = pair
    direction = _SWAPPED[direction] if swapped else direction
    return SortKey(k, direction, comparison_type_of(instr), canonical)


def _equality(instr: Instruction, direction: ComparisonDirection) -> tuple | None:
    """(k, comparison type, canonical) when ``instr`` is ``compare(lhs_k, rhs_k, direction)``."""
    pair = _compared_pair(instr)
    if pair is None or ComparisonDirection(instr.attrs.get("direction")) is not direction:
        return None
    return pair[0], comparison_type_of(instr), pair[2]


def _then_rest(key: SortKey | None, eq: tuple | None, rest: Instruction) -> tuple | None:
    """``key`` followed by the keys of ``rest``, when ``eq`` is equality on ``key``'s operand."""
    if key is None or eq != (key.operand, key.comparison_type, key.canonical):
        return None
    tail = _lexicographic(rest)
    if tail is None or any(t.operand == key.operand for t in tail):
        return None
    return (key, *tail)


def _lexicographic(instr: Instruction) -> tuple[SortKey, ...] | None:
    key = _strict_key(instr)
    if key is not None:
        return (key,)
    ops = instr.operands
    if instr.opcode is Opcode.OR and len(ops) == 2:
        # lt_k | (eq_k & rest), in any operand order
        for strict, conj in ((ops[0], ops[1]), (ops[1], ops[0])):
            if conj.opcode is not Opcode.AND or len(conj.operands) != 2:
                continue
            c0, c1 = conj.operands
            for eq, rest in ((c0, c1), (c1, c0)):
                found = _then_rest(_strict_key(strict), _equality(eq, ComparisonDirection.EQ), rest)
                if found is not None:
                    return found
    if instr.opcode is Opcode.SELECT and len(ops) == 3:
        pred, on_true, on_false = ops
        # select(eq_k, rest, lt_k) and select(ne_k, lt_k, rest)
        found = _then_rest(_strict_key(on_false), _equality(pred, ComparisonDirection.EQ), on_true)
        if found is None:
            found = _then_rest(
                _strict_key(on_true), _equality(pred, ComparisonDirection.NE), on_false
            )
        return found
    return None


def _comparator_parameters_ok(comp: Computation) -> bool:
    params = comp.parameters
    if comp.root is None or not params or len(params) % 2:
        return False
    if any(not p.shape.is_array or p.shape.dims for p in params):
        return False
    return all(params[2 * k].shape == params[2 * k + 1].shape for k in range(len(params) // 2))


def lexicographic_comparator(comp: Computation) -> tuple[SortKey, ...] | None:
    """The keys, most significant first, when ``comp`` is a sort comparator that orders
    lexicographically by strict compares of (lhs_k, rhs_k) pairs, else None.

    Recognised forms: a single ``compare(lhs_k, rhs_k, LT|GT)`` (either operand order), and
    chains ``or(lt_k, and(eq_k, rest))`` (JAX's multi-key comparator) or ``select(eq_k, rest,
    lt_k)``, where ``eq_k`` is an EQ compare of the same pair with the same comparison type.
    The compared values may be parameters or JAX's canonicalized float parameters (see
    :func:`canonicalized_float_parameter`), as ``jax.lax.sort`` emits.
    """
    if not _comparator_parameters_ok(comp):
        return None
    return _lexicographic(comp.root)


def simple_comparator(comp: Computation) -> SortKey | None:
    """(operand_index, direction, comparison_type) when ``comp`` is one strict compare of a
    (lhs_k, rhs_k) parameter pair, else None."""
    keys = lexicographic_comparator(comp)
    return keys[0] if keys is not None and len(keys) == 1 else None
