"""Interpreter: sort and topk.

Sort is always stable here (a stable result is a valid result of ``is_stable=false`` too), so
every backend can be checked against one answer.

Fast path: a comparator that orders lexicographically by strict compares of operand pairs (one
``compare LT/GT``, or JAX's ``lt0 | (eq0 & (lt1 | ...))``, also on JAX's canonicalized float
keys; see :mod:`hlort.ir.patterns`) becomes ``np.lexsort`` on keys that order like the
comparison: integers as they are, floats under TOTALORDER as integers of their bits
(-NaN < -inf < ... < -0.0 < +0.0 < ... < +inf < +NaN). Under the FLOAT comparison type -0.0 and
+0.0 tie (original order kept) and every NaN ties with the others above +inf (last ascending,
first descending), which is also exactly what JAX's canonicalized TOTALORDER comparator means.
XLA leaves NaN under FLOAT comparisons implementation-defined (the comparator is not a strict
weak order there); the general path may place NaNs differently.

General path: any comparator runs on a Batcher odd-even merge sorting network, each stage one
vectorized comparator call on whole arrays (O(log^2 n) calls). Ties are broken by the original
position, which makes the network stable: a pair swaps when ``cmp(later, earlier)`` or when
neither is less than the other and the later one came first originally.
"""

from __future__ import annotations

import functools

import numpy as np

from hlort.dtypes import from_numpy
from hlort.interpreter.array_calls import call_on_arrays
from hlort.interpreter.ops.elementwise import total_order_key
from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import ComparisonType
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import SortKey, lexicographic_comparator


def canonicalize_floats(x: np.ndarray) -> np.ndarray:
    """-0.0 -> +0.0 and every NaN -> +NaN, so that zeros tie and NaNs tie after +inf."""
    x = np.where(x == 0, np.zeros((), x.dtype), x)
    return np.where(np.isnan(x), np.array(np.nan).astype(x.dtype), x)


def order_key(
    x: np.ndarray, comparison_type: ComparisonType, canonical: bool = False
) -> np.ndarray | None:
    """An array that np.lexsort orders as ``compare(a, b, LT, comparison_type)`` (of the
    canonicalized values when ``canonical``), or None when the pairing of comparison type and
    element type is not one the fast path knows."""
    if from_numpy(x.dtype).is_float:
        if comparison_type is ComparisonType.FLOAT or canonical:
            x = canonicalize_floats(x)
        elif comparison_type is not ComparisonType.TOTALORDER:
            return None
        return total_order_key(x)
    if canonical:
        return None
    if x.dtype.kind == "i" and comparison_type is ComparisonType.SIGNED:
        return x
    if x.dtype.kind in "ub" and comparison_type is ComparisonType.UNSIGNED:
        return x.astype(np.uint8) if x.dtype.kind == "b" else x
    return None


def _lexsort_perm(operands: list[np.ndarray], keys: tuple[SortKey, ...]) -> np.ndarray | None:
    columns = []
    for key in keys:
        column = order_key(operands[key.operand], key.comparison_type, key.canonical)
        if column is None:
            return None
        columns.append(~column if key.descending else column)
    return np.lexsort(columns[::-1], axis=-1)


@functools.lru_cache(maxsize=32)
def batcher_stages(n: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """Compare-exchange stages of Batcher's odd-even merge sort of ``n`` (a power of two)
    elements: per stage, disjoint (low, high) position arrays."""
    stages = []
    p = 1
    while p < n:
        k = p
        while k >= 1:
            a = np.arange(n - k)
            r = k % p
            mask = (a >= r) & ((a - r) % (2 * k) < k) & (a // (2 * p) == (a + k) // (2 * p))
            low = a[mask]
            stages.append((low, low + k))
            k //= 2
        p *= 2
    return tuple(stages)


def _interleave(lhs: list[np.ndarray], rhs: list[np.ndarray]) -> list[np.ndarray]:
    return [v for pair in zip(lhs, rhs, strict=True) for v in pair]


def network_perm(ev, comp: Computation, operands: list[np.ndarray]) -> np.ndarray:
    """The stable sorting permutation of the last axis under comparator ``comp``."""
    shape = operands[0].shape
    n = shape[-1]
    if n <= 1 or operands[0].size == 0:
        return np.broadcast_to(np.arange(n), shape)
    flat = [x.reshape(-1, n) for x in operands]
    rows = flat[0].shape[0]
    size = 1 << (n - 1).bit_length()
    perm = np.tile(np.arange(size), (rows, 1))  # original positions; >= n is padding
    for low, high in batcher_stages(size):
        pl, ph = perm[:, low], perm[:, high]
        real_l, real_h = pl < n, ph < n
        xl = [np.take_along_axis(x, np.minimum(pl, n - 1), 1) for x in flat]
        xh = [np.take_along_axis(x, np.minimum(ph, n - 1), 1) for x in flat]
        with np.errstate(all="ignore"):
            h_lt_l = call_on_arrays(ev, comp, _interleave(xh, xl), pl.shape)[0]
            l_lt_h = call_on_arrays(ev, comp, _interleave(xl, xh), pl.shape)[0]
        swap = real_h & (~real_l | h_lt_l | (~l_lt_h & (ph < pl)))
        perm[:, low] = np.where(swap, ph, pl)
        perm[:, high] = np.where(swap, pl, ph)
    return perm[:, :n].reshape(shape)


@evaluates(Opcode.SORT)
def _sort(ev, instr, *operands):
    dim = instr.attrs["dimensions"][0]
    moved = [np.moveaxis(x, dim, -1) for x in operands]
    comp = instr.to_apply
    keys = lexicographic_comparator(comp)
    perm = _lexsort_perm(moved, keys) if keys is not None else None
    if perm is None:
        perm = network_perm(ev, comp, moved)
    results = [
        np.asarray(np.moveaxis(np.take_along_axis(x, perm, -1), -1, dim), order="C") for x in moved
    ]
    return tuple(results) if instr.shape.is_tuple else results[0]


@evaluates(Opcode.TOPK)
def _topk(ev, instr, x):
    """The k largest (or smallest) along the last axis, in order, ties by lower index first.

    Elements are ordered as XLA's CPU TopK orders them: by TOTALORDER for floats (+NaN above
    +inf, -0.0 below +0.0), by value for integers and pred.
    """
    return top_k(x, instr.attrs["k"], instr.attrs.get("largest", True))


def top_k(x: np.ndarray, k: int, largest: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(values, s32 indices)`` of the k largest (smallest) along the last axis, ties by lower
    index. The key keeps the element's own width and is reversed with ``~`` (never negated:
    ``-x`` overflows for the most negative value, and a cast of u64 to s64 wraps)."""
    if from_numpy(x.dtype).is_float:
        key = total_order_key(x)
    else:
        key = x.astype(np.uint8) if x.dtype.kind == "b" else x
    if largest:
        key = ~key
    perm = np.argsort(key, axis=-1, kind="stable")[..., :k]
    values = np.asarray(np.take_along_axis(x, perm, -1), order="C")
    return values, perm.astype(np.int32)
