"""What the scatter tests share: builders for update computations, a NumPy reference of
XLA's scatter, the spec's example dimension numbers."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import Builder, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode, ScatterDimensionNumbers, infer_shape
from hlort.ir.computation import Computation

A = shape.array
S = shape.scalar


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and bool(
            np.array_equal(
                np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                np.ascontiguousarray(b).reshape(-1).view(np.uint8),
            )
        )
    )


# -- update computations ---------------------------------------------------------------------------
def binary(b: Builder, opcode: Opcode, dt, swap: bool = False) -> Computation:
    """``(cur, upd) -> op(cur, upd)`` (or ``op(upd, cur)``) on scalars of ``dt``."""
    sub = b.sub(f"{opcode.value}_{dt}")
    cur, upd = sub.parameter(S(dt), "cur"), sub.parameter(S(dt), "upd")
    return b._comp(sub.finish(sub.op(opcode, (upd, cur) if swap else (cur, upd))))


def overwrite(b: Builder, *dts) -> Computation:
    """Returns the update values: (cur..., upd...) -> upd (a tuple when variadic)."""
    sub = b.sub("overwrite")
    sub_params = [sub.parameter(S(d)) for d in dts] + [sub.parameter(S(d)) for d in dts]
    ups = sub_params[len(dts) :]
    return b._comp(sub.finish(ups[0] if len(dts) == 1 else sub.tuple(ups)))


def scatter(operands, indices, updates, dn, make_comp):
    """Evaluate scatter; ``make_comp(b)`` builds the update computation in the module."""
    single = not isinstance(operands, (list, tuple))
    operands = [operands] if single else list(operands)
    updates = [updates] if single else list(updates)
    b = Builder("s")
    ops = [b.parameter(shape.of_value(o)) for o in operands]
    idx = b.parameter(shape.of_value(indices))
    ups = [b.parameter(shape.of_value(u)) for u in updates]
    module = b.build(b.scatter(ops, idx, ups, make_comp(b), dn))
    return evaluate(module, [*operands, indices, *updates])


def scatter_reference(operands, indices, updates, dn, combine):
    """The spec's formula, one update element at a time in (scatter index, window index) order;
    a window that does not fit inside the operand is skipped whole."""
    outs = [np.array(o) for o in operands]
    ivd = dn.index_vector_dim
    idx = indices[..., None] if ivd == indices.ndim else indices
    upd_shape = updates[0].shape
    window_axes = list(dn.update_window_dims)
    scatter_axes = [a for a in range(len(upd_shape)) if a not in window_axes]
    point = set(dn.inserted_window_dims) | set(dn.input_batching_dims)
    window_dims = [d for d in range(outs[0].ndim) if d not in point]
    fit = {d: 1 for d in range(outs[0].ndim)}
    fit.update({d: upd_shape[a] for d, a in zip(window_dims, window_axes, strict=True)})
    for si in np.ndindex(*[upd_shape[a] for a in scatter_axes]):
        start = [0] * outs[0].ndim
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            start[d] = int(idx[tuple(si[:ivd]) + (k,) + tuple(si[ivd:])])
        for od, idim in zip(dn.input_batching_dims, dn.scatter_indices_batching_dims, strict=True):
            start[od] = si[idim - (idim > ivd)]
        if any(not 0 <= start[d] <= outs[0].shape[d] - fit[d] for d in range(outs[0].ndim)):
            continue
        for wi in np.ndindex(*[upd_shape[a] for a in window_axes]):
            full = list(start)
            for d, w in zip(window_dims, wi, strict=True):
                full[d] += w
            where = [0] * len(upd_shape)
            for a, v in zip(scatter_axes, si, strict=True):
                where[a] = v
            for a, v in zip(window_axes, wi, strict=True):
                where[a] = v
            cur = [o[tuple(full)] for o in outs]
            new = combine(*cur, *[u[tuple(where)] for u in updates])
            new = new if isinstance(new, tuple) else (new,)
            for o, v in zip(outs, new, strict=True):
                o[tuple(full)] = v
    return outs[0] if len(outs) == 1 else tuple(outs)


def invalid(operands, dn, comp, *fragments):
    with pytest.raises(HlortError) as err:
        infer_shape(
            Opcode.SCATTER,
            operands,
            {
                "scatter_dimension_numbers": dn,
                "to_apply": comp,
                "indices_are_sorted": False,
                "unique_indices": False,
            },
        )
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    text = str(err.value)
    assert "scatter" in text
    for f in fragments:
        assert f in text, text


SPEC_DN = ScatterDimensionNumbers(
    update_window_dims=(2, 3),
    inserted_window_dims=(0,),
    scatter_dims_to_operand_dims=(1, 0),
    index_vector_dim=2,
)
SPEC_INPUT = np.arange(1, 25, dtype=np.int64).reshape(3, 4, 2)
SPEC_INDICES = np.array([[[0, 2], [1, 0], [2, 1]], [[0, 1], [1, 0], [0, 9]]], np.int64)
BATCH_DN = ScatterDimensionNumbers(
    update_window_dims=(3, 4),
    inserted_window_dims=(1,),
    scatter_dims_to_operand_dims=(2, 1),
    index_vector_dim=3,
    input_batching_dims=(0,),
    scatter_indices_batching_dims=(1,),
)


def spec_dn(**changes):
    base = dict(
        update_window_dims=(2, 3),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(1, 0),
        index_vector_dim=2,
    )
    base.update(changes)
    return ScatterDimensionNumbers(**base)
