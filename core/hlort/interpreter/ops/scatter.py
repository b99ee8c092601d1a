"""Interpreter: scatter (variadic), with XLA's out-of-bounds rule and deterministic order.

Every update element gets a flat target index into the operand. An update window that does not
fit entirely inside the operand is skipped, as XLA does (never clamped). Updates are applied in
the order of their scatter index (row-major over the scatter dims), window elements after that,
so duplicates combine in a fixed order:

* an "overwrite" computation keeps the last update per target;
* a single add / multiply / maximum / minimum / and / or / xor per output (``op_i(current_i,
  update_i)``) runs as one ``np.<ufunc>.at`` per output;
* any other computation runs in rounds, each holding at most one update per target, with one
  call of the computation on whole arrays per round (its ops are elementwise). Computations that
  are not purely elementwise on scalars fall back to one call per update.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.evaluator import Evaluator
from hlort.interpreter.ops.indexing import index_vectors, place, window_indices
from hlort.interpreter.ops.reduction import scatter_at, ufunc_for
from hlort.interpreter.registry import evaluates
from hlort.ir import patterns
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode


class ScatterPlan:
    """Where each update element goes, in application order.

    ``order`` permutes the updates' axes so scatter axes come first; in that layout the updates are
    ``rows`` (one per scatter index) of ``window`` elements. ``keep`` marks the rows whose window
    fits inside the operand; ``targets`` are the flat operand indices of the kept rows' elements.
    """

    def __init__(
        self, operand_shape: tuple[int, ...], indices: np.ndarray, update_shape: tuple[int, ...], dn
    ):
        rank = len(update_shape)
        operand_rank = len(operand_shape)
        starts = index_vectors(indices, dn.index_vector_dim)
        batch_shape = starts.shape[:-1]
        window_axes = tuple(dn.update_window_dims)
        scatter_axes = [a for a in range(rank) if a not in window_axes]
        point = set(dn.inserted_window_dims) | set(dn.input_batching_dims)
        window_dims = [d for d in range(operand_rank) if d not in point]
        window_sizes = [update_shape[a] for a in window_axes]
        fit = dict.fromkeys(range(operand_rank), 1)
        fit.update(zip(window_dims, window_sizes, strict=True))
        keep = np.full(batch_shape, all(fit[d] <= operand_shape[d] for d in fit), dtype=bool)
        index = window_indices(
            operand_rank,
            rank,
            window_axes,
            window_sizes,
            scatter_axes,
            batch_shape,
            dn.inserted_window_dims,
            dn.input_batching_dims,
            dn.scatter_indices_batching_dims,
            dn.index_vector_dim,
        )
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start = starts[..., k]
            keep &= (start >= 0) & (start <= operand_shape[d] - fit[d])
            index[d] = index[d] + place(start, scatter_axes, rank)
        flat = np.zeros((1,) * rank, np.int64)
        stride = 1
        for d in reversed(range(operand_rank)):
            flat = flat + index[d] * stride
            stride *= operand_shape[d]
        self.order = scatter_axes + list(window_axes)
        self.rows = int(np.prod(batch_shape, dtype=np.int64))
        self.window = int(np.prod(window_sizes, dtype=np.int64))
        self.keep = keep.reshape(-1)
        self.all_kept = bool(self.keep.all())
        self.targets = self.select(np.broadcast_to(flat, update_shape))

    def select(self, updates: np.ndarray) -> np.ndarray:
        """The kept elements of an updates-shaped array, flattened in application order."""
        rows = updates.transpose(self.order).reshape(self.rows, self.window)
        return (rows if self.all_kept else rows[self.keep]).reshape(-1)


def _ufuncs_for(comp: Computation, flats: list[np.ndarray]) -> list | None:
    """One ufunc per output when output i is ``op_i(current_i, update_i)``, else None."""
    ops = patterns.variadic_reducer_opcodes(comp)
    if ops is None:
        return None
    ufuncs = [ufunc_for(op, f.dtype) for op, f in zip(ops, flats, strict=True)]
    return None if any(u is None for u in ufuncs) else ufuncs


def _last_per_target(targets: np.ndarray) -> np.ndarray:
    """Positions (into ``targets``) of the last occurrence of each distinct target."""
    _, first_in_reversed = np.unique(targets[::-1], return_index=True)
    return targets.size - 1 - first_in_reversed


def _rounds(targets: np.ndarray) -> list[np.ndarray]:
    """Split positions 0..n-1 into rounds: round r holds each target's r-th occurrence, in order."""
    order = np.argsort(targets, kind="stable")
    sorted_targets = targets[order]
    n = targets.size
    new_group = np.r_[True, sorted_targets[1:] != sorted_targets[:-1]]
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    occurrence = np.empty(n, np.int64)
    occurrence[order] = np.arange(n) - group_start
    by_round = np.argsort(occurrence, kind="stable")
    bounds = np.cumsum(np.bincount(occurrence))
    return np.split(by_round, bounds[:-1])


class _Combiner:
    """Calls the update computation on arrays of (current, update) values."""

    def __init__(self, ev, comp: Computation):
        self.comp = comp
        self.vectorized = patterns.is_scalar_elementwise(comp)
        self.ev = Evaluator(
            check_shapes=False,
            replica_id=getattr(ev, "replica_id", 0),
            partition_id=getattr(ev, "partition_id", 0),
        )
        self.scalar_ev = ev

    def _outputs(self, result) -> list:
        return list(result) if isinstance(result, tuple) else [result]

    def __call__(self, args: list[np.ndarray], dtypes: list[np.dtype]) -> list[np.ndarray]:
        count = args[0].shape[0]
        if self.vectorized:
            outs = self._outputs(self.ev.call(self.comp, args))
            pairs = zip(outs, dtypes, strict=True)
            return [np.broadcast_to(np.asarray(o, dt), (count,)) for o, dt in pairs]
        results = [np.empty(count, dt) for dt in dtypes]
        for j in range(count):  # only for computations that cannot run on whole arrays
            scalars = [a[j : j + 1].reshape(()) for a in args]
            outs = self._outputs(self.scalar_ev.call(self.comp, scalars))
            for r, o in zip(results, outs, strict=True):
                r[j] = o
        return results


@evaluates(Opcode.SCATTER)
def _scatter(ev, instr, *args):
    n = (len(args) - 1) // 2
    operands, indices, updates = args[:n], args[n], args[n + 1 :]
    dn = instr.attrs["scatter_dimension_numbers"]
    comp = instr.attrs["to_apply"]
    outs = [np.array(o, order="C") for o in operands]
    flats = [o.reshape(-1) for o in outs]
    plan = ScatterPlan(operands[0].shape, indices, updates[0].shape, dn)
    if plan.targets.size:
        _combine(ev, comp, flats, plan.targets, [plan.select(u) for u in updates])
    return outs[0] if n == 1 else tuple(outs)


def _combine(
    ev, comp: Computation, flats: list[np.ndarray], targets: np.ndarray, values: list[np.ndarray]
) -> None:
    """Fold ``values`` into ``flats`` at ``targets`` in order, with ``comp`` as the combiner."""
    if patterns.is_overwrite(comp):
        last = _last_per_target(targets)
        for flat, vals in zip(flats, values, strict=True):
            flat[targets[last]] = vals[last]
        return
    ufuncs = _ufuncs_for(comp, flats)
    if ufuncs is not None:
        ops = patterns.variadic_reducer_opcodes(comp)
        with np.errstate(all="ignore"):  # NaN and overflow are values here, not errors
            for op, ufunc, flat, vals in zip(ops, ufuncs, flats, values, strict=True):
                scatter_at(op, ufunc, flat, targets, vals)
        return
    combiner = _Combiner(ev, comp)
    dtypes = [f.dtype for f in flats]
    for sel in _rounds(targets):
        where = targets[sel]
        current = [f[where] for f in flats]
        results = combiner(current + [v[sel] for v in values], dtypes)
        for flat, res in zip(flats, results, strict=True):
            flat[where] = res
