"""Shape rules: gather and scatter, with XLA's dimension numbers including batching dimensions.

The checks follow the StableHLO spec's constraints (which match XLA's shape inference): every
operand dimension is exactly one of offset / collapsed / batching (gather) or window / inserted /
batching (scatter); index_vector_dim may equal the rank of the indices (an implicit trailing 1).
"""

from __future__ import annotations

from hlort.ir.attributes import GatherDimensionNumbers, ScatterDimensionNumbers
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.dimension_lists import check_dimension_list, integer_tuple
from hlort.shape import ArrayShape, Shape, TupleShape, scalar


def _index_vector_size(q: ShapeQuery, indices: ArrayShape, index_vector_dim: int) -> int:
    if not 0 <= index_vector_dim <= indices.rank:
        q.fail(
            f"index_vector_dim={index_vector_dim} must be in [0, {indices.rank}] for "
            f"indices {indices}"
        )
    return indices.dims[index_vector_dim] if index_vector_dim < indices.rank else 1


def _check_batching(
    q: ShapeQuery,
    operand: ArrayShape,
    indices: ArrayShape,
    operand_dims: tuple[int, ...],
    indices_dims_attr,
    index_vector_dim: int,
    names: tuple[str, str],
) -> None:
    """Operand batching dims pair up with indices batching dims of the same sizes."""
    op_name, idx_name = names
    idx_dims = check_dimension_list(
        q, indices_dims_attr, indices.rank, idx_name, f"indices {indices}"
    )
    if len(idx_dims) != len(operand_dims):
        q.fail(
            f"{op_name}={list(operand_dims)} and {idx_name}={list(idx_dims)} must have the "
            "same length"
        )
    if index_vector_dim in idx_dims:
        q.fail(f"{idx_name}={list(idx_dims)} must not contain index_vector_dim={index_vector_dim}")
    for od, idim in zip(operand_dims, idx_dims, strict=True):
        if operand.dims[od] != indices.dims[idim]:
            q.fail(
                f"batching dimension {od} of operand {operand} (size {operand.dims[od]}) "
                f"and dimension {idim} of indices {indices} (size {indices.dims[idim]}) "
                "must have the same size"
            )


def _check_index_mapping(
    q: ShapeQuery,
    dn,
    names: tuple[str, str, str, str],
    operand: ArrayShape,
    indices: ArrayShape,
    vector: int,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The operand side of gather/scatter indexing; ``names`` are the dimension-number fields
    playing each role: the dims an index points at (collapsed / inserted), the operand batching
    dims, the map from index-vector entries to operand dims, the indices batching dims.

    Returns (point dims, operand batching dims).
    """
    point_name, batching_name, map_name, indices_batching_name = names
    of = f"operand {operand}"
    point = check_dimension_list(
        q, getattr(dn, point_name), operand.rank, point_name, of, ascending=True
    )
    batching = check_dimension_list(
        q, getattr(dn, batching_name), operand.rank, batching_name, of, ascending=True
    )
    index_map = check_dimension_list(q, getattr(dn, map_name), operand.rank, map_name, of)
    if set(point) & set(batching):
        q.fail(f"{point_name}={list(point)} and {batching_name}={list(batching)} must be disjoint")
    if set(index_map) & set(batching):
        q.fail(f"{map_name}={list(index_map)} must not contain {batching_name}={list(batching)}")
    if len(index_map) != vector:
        q.fail(
            f"{map_name}={list(index_map)} must have {vector} entries: the size of "
            f"index_vector_dim={dn.index_vector_dim} of indices {indices}"
        )
    _check_batching(
        q,
        operand,
        indices,
        batching,
        getattr(dn, indices_batching_name),
        dn.index_vector_dim,
        (batching_name, indices_batching_name),
    )
    return point, batching


@shape_rule(Opcode.GATHER)
def _gather(q: ShapeQuery) -> Shape:
    operand, indices = q.array(0), q.array(1)
    if not indices.dtype.is_integer:
        q.fail(f"start indices {indices} must have an integer element type")
    dn = q.attr("gather_dimension_numbers")
    if not isinstance(dn, GatherDimensionNumbers):
        q.fail(f"gather_dimension_numbers must be GatherDimensionNumbers, got {dn!r}")
    sizes = integer_tuple(q, q.attr("slice_sizes"), "slice_sizes")
    ivd = dn.index_vector_dim
    vector = _index_vector_size(q, indices, ivd)
    batch_sizes = [d for i, d in enumerate(indices.dims) if i != ivd]
    rank = len(batch_sizes) + len(integer_tuple(q, dn.offset_dims, "offset_dims"))
    offset = check_dimension_list(
        q,
        dn.offset_dims,
        rank,
        "offset_dims",
        f"the result of gathering from {operand} with {indices}",
        ascending=True,
    )
    collapsed, batching = _check_index_mapping(
        q,
        dn,
        (
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_index_map",
            "start_indices_batching_dims",
        ),
        operand,
        indices,
        vector,
    )
    if len(sizes) != operand.rank:
        q.fail(f"slice_sizes={list(sizes)} must have one entry per dimension of {operand}")
    for i, (s, d) in enumerate(zip(sizes, operand.dims, strict=True)):
        if not 0 <= s <= d:
            q.fail(f"slice_sizes={list(sizes)}: entry {i} must be in [0, {d}] for {operand}")
    for d in collapsed + batching:
        if sizes[d] > 1:
            q.fail(
                f"slice_sizes={list(sizes)}: collapsed or batching dimension {d} must have "
                f"slice size <= 1"
            )
    if len(offset) + len(collapsed) + len(batching) != operand.rank:
        q.fail(
            f"offset_dims={list(offset)}, collapsed_slice_dims={list(collapsed)} and "
            f"operand_batching_dims={list(batching)} must together have rank({operand}) = "
            f"{operand.rank} entries"
        )
    window = [s for i, s in enumerate(sizes) if i not in collapsed and i not in batching]
    dims, b, w = [], iter(batch_sizes), iter(window)
    for axis in range(rank):
        dims.append(next(w) if axis in offset else next(b))
    return ArrayShape(operand.dtype, tuple(dims))


def _check_update_computation(
    q: ShapeQuery, comp, operands: list[ArrayShape], updates: list[ArrayShape]
) -> None:
    """``to_apply`` takes (operand scalars..., update scalars...) and returns operand scalars."""
    if not isinstance(comp, Computation) or comp.root is None:
        q.fail(f"to_apply must be a finished computation, got {comp!r}")
    want = [scalar(s.dtype) for s in operands + updates]
    got = comp.parameter_shapes
    if got != want:
        q.fail(
            f"to_apply {comp.name} takes ({', '.join(map(str, got))}); it must take "
            f"({', '.join(map(str, want))})"
        )
    outs = [scalar(s.dtype) for s in operands]
    result = comp.result_shape
    ok = result == TupleShape(tuple(outs)) or (len(outs) == 1 and result == outs[0])
    if not ok:
        want_text = outs[0] if len(outs) == 1 else TupleShape(tuple(outs))
        q.fail(f"to_apply {comp.name} returns {result}; it must return {want_text}")


@shape_rule(Opcode.SCATTER)
def _scatter(q: ShapeQuery) -> Shape:
    count = len(q.operands)
    if count < 3 or count % 2 == 0:
        q.fail(f"takes N operands, the indices and N updates (2N+1 operands), got {count}")
    n = (count - 1) // 2
    operands = [q.array(i) for i in range(n)]
    indices = q.array(n)
    updates = [q.array(n + 1 + i) for i in range(n)]
    operand, update = operands[0], updates[0]
    for i in range(1, n):
        if operands[i].dims != operand.dims:
            q.fail(f"operand {i} {operands[i]} must have the dimensions of operand 0 {operand}")
        if updates[i].dims != update.dims:
            q.fail(f"update {i} {updates[i]} must have the dimensions of update 0 {update}")
    for i in range(n):
        if updates[i].dtype != operands[i].dtype:
            q.fail(
                f"update {i} {updates[i]} must have the element type of operand {i} {operands[i]}"
            )
    if not indices.dtype.is_integer:
        q.fail(f"scatter indices {indices} must have an integer element type")
    dn = q.attr("scatter_dimension_numbers")
    if not isinstance(dn, ScatterDimensionNumbers):
        q.fail(f"scatter_dimension_numbers must be ScatterDimensionNumbers, got {dn!r}")
    ivd = dn.index_vector_dim
    vector = _index_vector_size(q, indices, ivd)
    window_dims = check_dimension_list(
        q,
        dn.update_window_dims,
        update.rank,
        "update_window_dims",
        f"updates {update}",
        ascending=True,
    )
    inserted, batching = _check_index_mapping(
        q,
        dn,
        (
            "inserted_window_dims",
            "input_batching_dims",
            "scatter_dims_to_operand_dims",
            "scatter_indices_batching_dims",
        ),
        operand,
        indices,
        vector,
    )
    if len(window_dims) + len(inserted) + len(batching) != operand.rank:
        q.fail(
            f"update_window_dims={list(window_dims)}, inserted_window_dims={list(inserted)} "
            f"and input_batching_dims={list(batching)} must together have rank({operand}) "
            f"= {operand.rank} entries"
        )
    scatter_sizes = [d for i, d in enumerate(indices.dims) if i != ivd]
    if update.rank != len(window_dims) + len(scatter_sizes):
        q.fail(
            f"updates {update} must have rank {len(window_dims) + len(scatter_sizes)}: "
            f"{len(window_dims)} window dims plus the {len(scatter_sizes)} dims of indices "
            f"{indices} other than index_vector_dim={ivd}"
        )
    scatter_axes = [a for a in range(update.rank) if a not in window_dims]
    for axis, size in zip(scatter_axes, scatter_sizes, strict=True):
        if update.dims[axis] != size:
            q.fail(
                f"updates {update} dimension {axis} must have size {size} to match indices "
                f"{indices}"
            )
    window_operand_dims = [d for d in range(operand.rank) if d not in inserted + batching]
    for axis, d in zip(window_dims, window_operand_dims, strict=True):
        if update.dims[axis] > operand.dims[d]:
            q.fail(
                f"updates {update} window dimension {axis} (size {update.dims[axis]}) is "
                f"larger than dimension {d} of operand {operand}"
            )
    _check_update_computation(q, q.attr("to_apply"), operands, updates)
    return operand if n == 1 else TupleShape(tuple(operands))
