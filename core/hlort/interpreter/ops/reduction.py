"""Interpreter: reduce, and the reducer machinery reduce-window and select-and-scatter share.

A reducer is a computation on scalars. When it is a plain add/multiply/maximum/minimum/and/or/xor
(per output, for variadic reduce) the elements are reduced with the NumPy ufunc and the init
value is combined once at the end. Any other reducer is applied as a vectorized tree: the reduced
axis is split into adjacent pairs, the reducer is called once on whole arrays of left and right
elements (left in the accumulator parameters), and the halves are reduced again until one element
is left, which is finally combined with the init value as ``to_apply(init, rest)``. Adjacent
pairing keeps the order of the elements, so an associative reducer gives what a sequential fold
gives, up to floating-point rounding; XLA leaves the order of a reduce unspecified (its CPU
backend vectorizes long rows). Reduce-window differs: XLA folds each (short) window in order
from the init, and reduce_window.py does the same for every rounding-sensitive reducer.

Semantics choices: floats narrower than 32 bits are reduced in float32 on the fast path and
rounded once (XLA backends also accumulate such sums wider); an empty reduction gives the init
value. Elements that a ``valid`` mask marks absent (reduce-window padding and base-dilation
holes) take no part in the reduction, as in XLA's evaluator and code generators.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hlort.dtypes import F8E5M2, from_numpy
from hlort.interpreter.array_calls import call_on_arrays
from hlort.interpreter.ops.elementwise import float_max, float_min
from hlort.interpreter.ops.float_rounding import F32, NARROW_FLOATS, is_ml_dtype
from hlort.interpreter.registry import evaluates
from hlort.interpreter.sub_byte import is_sub_byte
from hlort.ir.computation import Computation
from hlort.ir.dynamic_dimensions import size_source
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes

_UFUNCS = {
    Opcode.ADD: np.add,
    Opcode.MULTIPLY: np.multiply,
    Opcode.MAXIMUM: np.maximum,
    Opcode.MINIMUM: np.minimum,
    Opcode.AND: np.bitwise_and,
    Opcode.OR: np.bitwise_or,
    Opcode.XOR: np.bitwise_xor,
}
_BITWISE = (Opcode.AND, Opcode.OR, Opcode.XOR)


def ufunc_for(op: Opcode, dtype: np.dtype) -> np.ufunc | None:
    """The NumPy ufunc computing ``op`` on ``dtype`` exactly as the HLO op does, or None.

    The one table behind every fast path of reduce, reduce-window, scatter and
    select-and-scatter, for ``ufunc.reduce`` and ``ufunc.at`` alike: ml_dtypes gives bfloat16
    and the float8 types real ufunc loops (computed in f32, rounded once), so ``.at`` folds them
    in order exactly as the interpreter's own ops do. Zeros of float max/min still need
    :func:`combine`, :func:`fix_zero_signs` or :func:`scatter_at`. No complex product: NumPy's
    SIMD loop for it rounds differently on some CPUs (it does on AVX-512 ones), while the
    multiply op (and XLA) computes ``(ac - bd) + (ad + bc)i`` from four rounded products, so
    the reducer itself is applied.
    No f8E5M2 max/min either: ml_dtypes' loops return a NaN operand as it is, payload and all,
    where the maximum op (computing in f32) makes the canonical NaN.
    """
    if op in _BITWISE and dtype.kind not in "biu":
        return None
    if op is Opcode.MULTIPLY and dtype.kind == "c":
        return None
    if op in (Opcode.MAXIMUM, Opcode.MINIMUM) and is_ml_dtype(dtype, F8E5M2):
        return None
    if op in (Opcode.MAXIMUM, Opcode.MINIMUM) and dtype.kind == "c":
        return None
    return _UFUNCS.get(op)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype the fast path computes in: float32 for narrower floats, a byte for s4/u4 (every
    fast-path op is exact or congruent modulo 16 there), else ``dtype``."""
    if dtype in NARROW_FLOATS:
        return F32
    if is_sub_byte(dtype):
        return np.dtype(np.int8 if dtype.name == "int4" else np.uint8)
    return dtype


def identity_of(op: Opcode, dtype: np.dtype) -> np.ndarray:
    """A value ``e`` with ``op(e, x) == x`` for every ``x`` of ``dtype`` (-0.0 for a float add,
    -0.0 - 0.0i for a complex one, so that a sum of -0.0 stays -0.0)."""
    kind = dtype.kind
    if op is Opcode.ADD:
        value = complex(-0.0, -0.0) if kind == "c" else -0.0 if kind == "f" else 0
    elif op is Opcode.MULTIPLY:
        value = 1
    elif op in (Opcode.MAXIMUM, Opcode.MINIMUM):
        low = op is Opcode.MAXIMUM
        if kind == "b":
            value = not low
        elif kind in "iu":
            info = np.iinfo(dtype)
            value = info.min if low else info.max
        else:
            value = -np.inf if low else np.inf
    elif op is Opcode.AND:
        value = True if kind == "b" else np.array(-1).astype(dtype)
    else:
        value = 0
    return np.array(value).astype(dtype)


def reduce_initial(op: Opcode, dtype: np.dtype) -> dict:
    """``initial=-0.0`` for float sums: NumPy's pairwise sum starts at +0.0 and would turn a sum
    of negative zeros into +0.0."""
    if op is Opcode.ADD and dtype.kind in "fc":
        return {"initial": identity_of(op, dtype)}
    return {}


def _orders_zeros(op: Opcode, dtype: np.dtype) -> bool:
    """True for float maximum / minimum, which order -0 below +0 (np.maximum does not)."""
    return op in (Opcode.MAXIMUM, Opcode.MINIMUM) and from_numpy(dtype).is_float


def combine(op: Opcode, ufunc: np.ufunc, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``op(a, b)`` with the ufunc, or with the HLO op's signed-zero rule for float max/min."""
    if _orders_zeros(op, np.result_type(a, b)):
        return (float_max if op is Opcode.MAXIMUM else float_min)(a, b)
    return ufunc(a, b)


def fix_zero_signs(op: Opcode, x: np.ndarray, acc: np.ndarray, axis) -> np.ndarray:
    """Give the zeros of a float max/min reduction ``acc`` of ``x`` over ``axis`` the right sign.

    np.maximum.reduce keeps whichever equal zero it met first; HLO's maximum is +0 when any
    reduced element is +0 (minimum: -0 when any is -0), whatever the order.
    """
    if not _orders_zeros(op, acc.dtype):
        return acc
    zero = acc == 0
    if not np.any(zero):
        return acc
    if op is Opcode.MAXIMUM:
        pos = np.any((x == 0) & ~np.signbit(x), axis=axis)
        signed = np.where(pos, acc.dtype.type(0.0), acc.dtype.type(-0.0))
    else:
        neg = np.any((x == 0) & np.signbit(x), axis=axis)
        signed = np.where(neg, acc.dtype.type(-0.0), acc.dtype.type(0.0))
    return np.where(zero, signed, acc)


def scatter_at(
    op: Opcode, ufunc: np.ufunc, flat: np.ndarray, targets: np.ndarray, values: np.ndarray
) -> None:
    """``ufunc.at(flat, targets, values)``, with float max/min zeros signed as the HLO op signs
    them (+0 for a maximum when the target or any of its updates is +0; -0 for a minimum)."""
    if not _orders_zeros(op, flat.dtype):
        ufunc.at(flat, targets, values)
        return
    before = flat[targets]
    ufunc.at(flat, targets, values)
    zero = flat[targets] == 0
    if not np.any(zero):
        return
    hit = targets[zero]
    seen = np.concatenate([before[zero], np.broadcast_to(values, targets.shape)[zero]])
    maximum = op is Opcode.MAXIMUM
    flat[hit] = flat.dtype.type(-0.0 if maximum else 0.0)
    wins = (seen == 0) & (np.signbit(seen) != maximum)
    flat[np.concatenate([hit, hit])[wins]] = flat.dtype.type(0.0 if maximum else -0.0)


def _fast_reduce(
    op: Opcode, x: np.ndarray, init: np.ndarray, valid: np.ndarray | None
) -> np.ndarray | None:
    """ufunc-reduce the last axis of ``x``, then combine with ``init``; None if unsupported."""
    work = compute_dtype(x.dtype)
    ufunc = ufunc_for(op, work)
    if ufunc is None:
        return None
    x = x.astype(work, copy=False)
    if valid is not None:
        x = np.where(valid, x, identity_of(op, work))
    with np.errstate(all="ignore"):
        acc = ufunc.reduce(x, axis=-1, dtype=work, **reduce_initial(op, work))
        acc = fix_zero_signs(op, x, np.asarray(acc), -1)
        out = combine(op, ufunc, np.asarray(init).astype(work), acc)
    return np.asarray(out).astype(init.dtype)


def _tree_reduce(
    ev,
    comp: Computation,
    arrays: list[np.ndarray],
    inits: list[np.ndarray],
    valid: np.ndarray | None,
) -> list[np.ndarray]:
    batch = arrays[0].shape[:-1]
    m = arrays[0].shape[-1]
    values = arrays
    with np.errstate(all="ignore"):
        while m > 1:
            half = m // 2
            left = [v[..., 0 : 2 * half : 2] for v in values]
            right = [v[..., 1 : 2 * half : 2] for v in values]
            out = call_on_arrays(ev, comp, left + right, (*batch, half))
            if valid is not None:
                lv, rv = valid[..., 0 : 2 * half : 2], valid[..., 1 : 2 * half : 2]
                out = [
                    np.where(lv & rv, o, np.where(lv, a, b))
                    for o, a, b in zip(out, left, right, strict=True)
                ]
                pair_valid = lv | rv
            if m % 2:
                out = [
                    np.concatenate([o, v[..., -1:]], axis=-1)
                    for o, v in zip(out, values, strict=True)
                ]
                if valid is not None:
                    pair_valid = np.concatenate([pair_valid, valid[..., -1:]], axis=-1)
            values = out
            if valid is not None:
                valid = pair_valid
            m = half + m % 2
        init_arrays = [np.broadcast_to(i, batch) for i in inits]
        final = call_on_arrays(ev, comp, init_arrays + [v[..., 0] for v in values], batch)
    if valid is not None:
        final = [np.where(valid[..., 0], f, i) for f, i in zip(final, init_arrays, strict=True)]
    return final


def reduce_last_axis(
    ev,
    comp: Computation,
    arrays: Sequence[np.ndarray],
    inits: Sequence[np.ndarray],
    valid: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Reduce the last axis of each of ``arrays`` (equal shapes) with reducer ``comp``.

    ``inits`` are 0-d arrays, one per input; ``valid`` (optional, bool, same shape) marks the
    elements that take part. Returns one array per input, of the batch shape, in the init types.
    """
    arrays, inits = list(arrays), [np.asarray(i) for i in inits]
    batch = arrays[0].shape[:-1]
    if arrays[0].shape[-1] == 0 or math.prod(batch) == 0:
        return [np.array(np.broadcast_to(i, batch)) for i in inits]
    ops = variadic_reducer_opcodes(comp)
    if ops is not None:
        fast = [_fast_reduce(op, x, i, valid) for op, x, i in zip(ops, arrays, inits, strict=True)]
        if all(f is not None for f in fast):
            return fast
    return [np.asarray(r, order="C") for r in _tree_reduce(ev, comp, arrays, inits, valid)]


def as_result(instr, results: list[np.ndarray]):
    """An array, or a tuple when the instruction's shape is a tuple."""
    return tuple(results) if instr.shape.is_tuple else results[0]


def _mask_padding(ev, operand, array, init, dims):
    """XLA's dynamic padder: a reduced bounded dimension (``f32[<=8]``) whose size a
    set-dimension-size gave is reduced over that size only, the padding read as ``init``."""
    dynamic = getattr(operand.shape, "dynamic", None)
    if not dynamic:
        return array
    for d in dims:
        source = size_source(operand, d) if dynamic[d] else None
        if source is None:
            continue
        size = int(np.asarray(ev.value_of(source.operands[1])).reshape(()))
        index = np.arange(array.shape[d]).reshape([-1 if k == d else 1 for k in range(array.ndim)])
        array = np.where(index < size, array, np.asarray(init, array.dtype))
    return array


@evaluates(Opcode.REDUCE)
def _reduce(ev, instr, *values):
    n = len(values) // 2
    arrays, inits = values[:n], values[n:]
    dims = sorted(instr.attrs["dimensions"])
    arrays = [_mask_padding(ev, instr.operands[i], a, inits[i], dims) for i, a in enumerate(arrays)]
    shape = arrays[0].shape
    kept = [d for d in range(len(shape)) if d not in dims]
    batch = tuple(shape[d] for d in kept)
    m = math.prod(shape[d] for d in dims)
    flat = [a.transpose(kept + dims).reshape((*batch, m)) for a in arrays]
    return as_result(instr, reduce_last_axis(ev, instr.to_apply, flat, inits))
