"""Interpreter: gather, plus the index arithmetic gather and scatter share.

Both ops map every element of their "wide" array (gather's result, scatter's updates) to an operand
index: start index (from the indices array) + batching index + window offset. Here that map is
built as one broadcastable index array per operand dimension, so the op itself is a single NumPy
fancy index (gather) or one flat scatter (see ``scatter.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode

_INT64_MAX = np.iinfo(np.int64).max


def index_vectors(indices: np.ndarray, index_vector_dim: int) -> np.ndarray:
    """Indices as int64 with the index vector last: shape (batch dims..., K).

    ``index_vector_dim == indices.ndim`` means an implicit trailing vector of size 1. Unsigned
    64-bit values above int64's range saturate (they are out of bounds either way).
    """
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    else:
        indices = np.moveaxis(indices, index_vector_dim, -1)
    if indices.dtype == np.uint64:
        indices = np.minimum(indices, _INT64_MAX)
    return indices.astype(np.int64)


def place(arr: np.ndarray, axes: Sequence[int], rank: int) -> np.ndarray:
    """A view of ``arr`` of rank ``rank`` whose dimension i sits at axis ``axes[i]`` (others 1)."""
    shape = [1] * rank
    for axis, size in zip(axes, arr.shape, strict=True):
        shape[axis] = size
    return arr.reshape(shape)


def window_indices(
    operand_rank: int,
    wide_rank: int,
    window_axes: Sequence[int],
    window_sizes: Sequence[int],
    batch_axes: Sequence[int],
    batch_shape: Sequence[int],
    point_dims: Sequence[int],
    operand_batching_dims: Sequence[int],
    indices_batching_dims: Sequence[int],
    index_vector_dim: int,
) -> list[np.ndarray]:
    """Per operand dimension, the part of the operand index not taken from the start indices.

    Window dimensions (neither point nor batching, in order) get ``arange(size)`` along their
    window axis of the wide array; batching dimensions get the position along the matching batch
    axis; point dimensions (collapsed / inserted) get 0. Each array broadcasts to the wide shape.
    """
    out = [np.zeros((1,) * wide_rank, np.int64) for _ in range(operand_rank)]
    skip = set(point_dims) | set(operand_batching_dims)
    window_dims = [d for d in range(operand_rank) if d not in skip]
    for d, axis, size in zip(window_dims, window_axes, window_sizes, strict=True):
        out[d] = place(np.arange(size, dtype=np.int64), [axis], wide_rank)
    for d, idim in zip(operand_batching_dims, indices_batching_dims, strict=True):
        j = idim - (idim > index_vector_dim)  # position among the non-index-vector dims
        out[d] = place(np.arange(batch_shape[j], dtype=np.int64), [batch_axes[j]], wide_rank)
    return out


@evaluates(Opcode.GATHER)
def _gather(ev, instr, operand, indices):
    dn = instr.attrs["gather_dimension_numbers"]
    sizes = tuple(instr.attrs["slice_sizes"])
    out_shape = instr.shape.dims
    rank = len(out_shape)
    if operand.size == 0 or any(sizes[d] == 0 for d in dn.collapsed_slice_dims):
        return np.zeros(out_shape, operand.dtype)  # every slice is empty: nothing to read
    starts = index_vectors(indices, dn.index_vector_dim)
    batch_axes = [a for a in range(rank) if a not in dn.offset_dims]
    skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window_sizes = [s for d, s in enumerate(sizes) if d not in skip]
    index = window_indices(
        operand.ndim,
        rank,
        dn.offset_dims,
        window_sizes,
        batch_axes,
        starts.shape[:-1],
        dn.collapsed_slice_dims,
        dn.operand_batching_dims,
        dn.start_indices_batching_dims,
        dn.index_vector_dim,
    )
    for k, d in enumerate(dn.start_index_map):
        start = np.clip(starts[..., k], 0, operand.shape[d] - sizes[d])
        index[d] = index[d] + place(start, batch_axes, rank)
    result = operand[tuple(index)]  # a fresh array, or a scalar for a rank-0 operand
    if isinstance(result, np.ndarray) and result.shape == out_shape:
        return result
    return np.array(np.broadcast_to(result, out_shape))  # axes no index array reached
