"""Interpreter: reduce-window and select-and-scatter.

Both look at windows of a base that is first dilated (``base_dilation - 1`` holes between
elements) and padded (negative padding crops). The windows are strided views of that base
(``sliding_window_view``, then the window strides and window dilations as slice steps), so every
window is reduced or searched at once with no loop over elements; at most a loop over the
positions inside the window.

Order: XLA (its evaluator and CPU emitter) and the StableHLO reference fold each window in
row-major order of its positions, starting from the init value: ``acc = f(acc, x)``, rounded to
the element type at every step. A float add or multiply, and any other reducer (whose algebra
is unknown), is folded that way (the corpus' bf16 / f16 cumulative sums then match bit for bit);
exact reducers (integers, max/min, bitwise) keep the one-shot ufunc reduce.

XLA semantics, as in its evaluator and code generators: padding and holes are not elements. A
reduce-window combines the init value with the real elements of a window only (a window of only
padding gives the init value); the StableHLO spec instead reduces padding as copies of the init,
which differs only for an init that is not the reducer's identity. Select-and-scatter never
selects padding; a window of only padding scatters nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hlort.interpreter.array_calls import call_on_arrays
from hlort.interpreter.ops.reduction import (
    as_result,
    combine,
    compute_dtype,
    fix_zero_signs,
    identity_of,
    reduce_initial,
    scatter_at,
    ufunc_for,
)
from hlort.interpreter.ops.window_padding import dilate_and_pad
from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import WindowDim
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import binary_reducer_opcode, variadic_reducer_opcodes
from hlort.ir.shape_rules.convolution import dilated_bound, strided_bound


def output_dims(dims: Sequence[int], window: Sequence[WindowDim]) -> tuple[int, ...]:
    return tuple(
        strided_bound(
            dilated_bound(d, w.base_dilation) + w.padding_low + w.padding_high,
            dilated_bound(w.size, w.window_dilation),
            w.stride,
        )
        for d, w in zip(dims, window, strict=True)
    )


def windows_of(padded: np.ndarray, window: Sequence[WindowDim]) -> np.ndarray:
    """A view of shape (output dims..., window sizes...) of an already dilated, padded base."""
    spans = [dilated_bound(w.size, w.window_dilation) for w in window]
    view = np.lib.stride_tricks.sliding_window_view(padded, spans)
    steps = [slice(None, None, w.stride) for w in window]
    steps += [slice(None, None, w.window_dilation) for w in window]
    return view[tuple(steps)]


def _flat_windows(padded: np.ndarray, window: Sequence[WindowDim]) -> np.ndarray:
    """(output dims..., elements of the window in row-major order)."""
    view = windows_of(padded, window)
    rank = len(window)
    return view.reshape((*view.shape[:rank], -1))


def _needs_mask(window: Sequence[WindowDim]) -> bool:
    return any(w.base_dilation > 1 or w.padding_low > 0 or w.padding_high > 0 for w in window)


@evaluates(Opcode.REDUCE_WINDOW)
def _reduce_window(ev, instr, *values):
    n = len(values) // 2
    arrays, inits = values[:n], values[n:]
    window = instr.attrs["window"]
    comp = instr.to_apply
    out = output_dims(arrays[0].shape, window)
    if math.prod(out) == 0:
        return as_result(instr, [np.empty(out, dtype=i.dtype) for i in inits])
    ops = variadic_reducer_opcodes(comp)
    triples = list(zip(ops or (), arrays, inits, strict=False))
    if ops is not None and all(ufunc_for(op, compute_dtype(x.dtype)) for op, x, _ in triples):
        return as_result(instr, [_ufunc_windows(op, x, i, window) for op, x, i in triples])
    views = [
        windows_of(dilate_and_pad(x, window, i), window) for x, i in zip(arrays, inits, strict=True)
    ]
    valid = None
    if _needs_mask(window):
        valid = windows_of(dilate_and_pad(np.ones(arrays[0].shape, bool), window, False), window)
    return as_result(instr, _fold_computation(ev, comp, views, inits, valid, len(window)))


def _positions(view: np.ndarray, rank: int):
    """Index tuples selecting, in row-major order, each window position of a window view."""
    for pos in np.ndindex(*view.shape[rank:]):
        yield (Ellipsis, *pos)


def _fold_computation(
    ev,
    comp: Computation,
    views: Sequence[np.ndarray],
    inits: Sequence[np.ndarray],
    valid: np.ndarray | None,
    rank: int,
) -> list[np.ndarray]:
    """``acc = comp(acc, x)`` over the window positions in order, from the inits, all windows at
    once (one call of ``comp`` per window position); absent elements leave ``acc`` as it is."""
    out = views[0].shape[:rank]
    accs = [np.broadcast_to(np.asarray(i), out) for i in inits]
    with np.errstate(all="ignore"):
        for index in _positions(views[0], rank):
            new = call_on_arrays(ev, comp, accs + [v[index] for v in views], out)
            if valid is not None:
                new = [np.where(valid[index], n, a) for n, a in zip(new, accs, strict=True)]
            accs = new
    return [np.array(a, order="C") for a in accs]


def _order_matters(op: Opcode, dtype: np.dtype) -> bool:
    """A float or complex sum or product: its result depends on the order of the fold."""
    return op in (Opcode.ADD, Opcode.MULTIPLY) and dtype.kind in "fc"


def _ufunc_windows(
    op: Opcode, x: np.ndarray, init: np.ndarray, window: Sequence[WindowDim]
) -> np.ndarray:
    """Fast path: absent elements are the op's identity; reduce the window axes of the view."""
    work = compute_dtype(x.dtype)
    ufunc = ufunc_for(op, work)
    padded = dilate_and_pad(x.astype(work, copy=False), window, identity_of(op, work))
    view = windows_of(padded, window)
    if _order_matters(op, work):
        return _fold_ufunc(ufunc, view, init, len(window))
    axes = tuple(range(len(window), 2 * len(window)))
    with np.errstate(all="ignore"):
        acc = ufunc.reduce(view, axis=axes, dtype=work, **reduce_initial(op, work))
        acc = fix_zero_signs(op, view, np.asarray(acc), axes)
        out = combine(op, ufunc, np.asarray(init).astype(work), acc)
    return np.asarray(np.asarray(out).astype(init.dtype), order="C")


def _fold_ufunc(ufunc: np.ufunc, view: np.ndarray, init: np.ndarray, rank: int) -> np.ndarray:
    """Fold a float sum / product over the window positions in order, starting from ``init``.

    ``view`` is in the compute type (f32 for narrow floats); each step is rounded to the element
    type, as XLA's CPU backend does when it widens a bf16 / f16 add. That is the correctly
    rounded narrow add: f32's 24-bit significand has at least 2p + 2 bits for these p-bit types,
    so rounding twice equals rounding once. Padding holds the op's identity: ``acc`` unchanged.
    """
    rounding = view.dtype != init.dtype
    acc = np.full(view.shape[:rank], np.asarray(init).astype(view.dtype), dtype=view.dtype)
    with np.errstate(all="ignore"):
        for index in _positions(view, rank):
            ufunc(acc, view[index], out=acc)
            if rounding:
                acc[...] = acc.astype(init.dtype)
        return np.asarray(acc.astype(init.dtype), order="C")


@evaluates(Opcode.SELECT_AND_SCATTER)
def _select_and_scatter(ev, instr, operand, source, init):
    window = instr.attrs["window"]
    result = np.full(operand.size, init, dtype=init.dtype)
    if source.size == 0 or operand.size == 0:
        return result.reshape(operand.shape)
    selected = select_in_windows(ev, instr.attrs["select"], operand, window)
    chosen = selected >= 0
    scatter_combine(ev, instr.attrs["scatter"], result, selected[chosen], source[chosen])
    return result.reshape(operand.shape)


def select_in_windows(
    ev, select: Computation, operand: np.ndarray, window: Sequence[WindowDim]
) -> np.ndarray:
    """The flat operand index each window selects (-1 for a window of only padding).

    Windows are walked in row-major order of their positions, all windows at once: the first
    real element is selected, then a candidate replaces the selection unless
    ``select(selected, candidate)`` is true (XLA: ``GE`` keeps the first maximum).
    """
    indices = np.arange(operand.size).reshape(operand.shape)
    candidates = _flat_windows(dilate_and_pad(indices, window, -1), window)
    flat_operand = operand.reshape(-1)
    out = candidates.shape[:-1]
    chosen = np.full(out, -1, dtype=np.int64)
    chosen_value = np.zeros(out, dtype=operand.dtype)
    for j in range(candidates.shape[-1]):
        index = candidates[..., j]
        real = index >= 0
        value = flat_operand[np.where(real, index, 0)]
        have = chosen >= 0
        take = real & ~have
        if have.any():
            with np.errstate(all="ignore"):
                keep = call_on_arrays(ev, select, [chosen_value, value], out)[0]
            take |= real & have & ~keep
        chosen = np.where(take, index, chosen)
        chosen_value = np.where(take, value, chosen_value)
    return chosen


def scatter_combine(
    ev, scatter: Computation, result: np.ndarray, targets: np.ndarray, sources: np.ndarray
) -> None:
    """``result[t] = scatter(source, result[t])`` for each (t, source) in order, in place.

    A plain add/multiply/max/min/... uses ``ufunc.at`` (see :func:`ufunc_for`); otherwise the
    updates go in rounds, round r applying every target's r-th update at once.
    """
    if targets.size == 0:
        return
    op = binary_reducer_opcode(scatter)
    ufunc = ufunc_for(op, result.dtype) if op is not None else None
    if ufunc is not None:
        with np.errstate(all="ignore"):
            scatter_at(op, ufunc, result, targets, sources)
        return
    order = np.argsort(targets, kind="stable")
    ordered = targets[order]
    starts = np.concatenate([[True], ordered[1:] != ordered[:-1]])
    positions = np.arange(ordered.size)
    group_start = np.maximum.accumulate(np.where(starts, positions, 0))
    rank = np.empty_like(positions)
    rank[order] = positions - group_start
    for r in range(int(rank.max()) + 1):
        now = rank == r
        where = targets[now]
        with np.errstate(all="ignore"):
            combined = call_on_arrays(ev, scatter, [sources[now], result[where]], where.shape)[0]
        result[where] = combined
