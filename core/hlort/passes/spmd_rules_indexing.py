"""Partitioning rules for convolution, gather, scatter and tuples (see spmd_rules.py)."""

from __future__ import annotations

from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import HloSharding
from hlort.passes.spmd_reshard import CannotPartition, derive
from hlort.passes.spmd_rules import PValue, check_even, emit, rule, to

_REPLICATED = HloSharding.replicate()


def _cut_axes(s: HloSharding) -> set[int]:
    return {d for d, t in enumerate(s.tile_counts) if t > 1} if s.is_tiled else set()


@rule(Opcode.CONVOLUTION)
def _convolution(e, instr, ops):
    """Cut along the input's batch dimension only: each device convolves its own examples
    with the whole kernel."""
    x, k = ops
    dn = instr.attrs["dim_labels"]
    cut = _cut_axes(x.sharding)
    if cut - {dn.input_batch_dimension}:
        raise CannotPartition("the input is cut along a feature or spatial dimension")
    if cut and instr.attrs.get("batch_group_count", 1) != 1:
        raise CannotPartition("batch_group_count > 1 mixes the batch with the features")
    mapping = [None] * instr.shape.rank
    mapping[dn.output_batch_dimension] = dn.input_batch_dimension
    out = derive(x.sharding, mapping) if cut else _REPLICATED
    x_sharding = x.sharding if cut else _REPLICATED
    check_even(instr.operands[0], x_sharding)
    operands = [to(e, x, x_sharding, instr.operands[0]), to(e, k, _REPLICATED, instr.operands[1])]
    return emit(e, instr, operands, out)


@rule(Opcode.GATHER)
def _gather(e, instr, ops):
    """Cut along the indices' batch dimensions: each device gathers for its own indices. A
    batched gather's operand is cut along its batching dimensions like the indices."""
    operand, indices = ops
    dn = instr.attrs["gather_dimension_numbers"]
    s = indices.sharding
    rank = instr.operands[1].shape.rank
    if dn.index_vector_dim < rank and dn.index_vector_dim in _cut_axes(s):
        raise CannotPartition("the indices are cut along their index vector dimension")
    if not _cut_axes(s):
        s = _REPLICATED
    batch_dims = [d for d in range(rank) if d != dn.index_vector_dim]
    out_batch = [d for d in range(instr.shape.rank) if d not in dn.offset_dims]
    mapping: list[int | None] = [None] * instr.shape.rank
    for out_dim, index_dim in zip(out_batch, batch_dims, strict=True):
        mapping[out_dim] = index_dim
    out = derive(s, mapping)
    operand_map: list[int | None] = [None] * instr.operands[0].shape.rank
    for o_dim, i_dim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        operand_map[o_dim] = i_dim
    operand_sharding = derive(s, operand_map)
    check_even(instr.operands[1], s)
    check_even(instr.operands[0], operand_sharding)
    operands = [
        to(e, operand, operand_sharding, instr.operands[0]),
        to(e, indices, s, instr.operands[1]),
    ]
    return emit(e, instr, operands, out)


@rule(Opcode.SCATTER)
def _scatter(e, instr, ops):
    """A batched scatter cut along its batching dimensions: each device updates its own
    batch of the operand. Any other cut would make devices write the same elements."""
    if len(ops) != 3:
        raise CannotPartition("a scatter of several operands (variadic)")
    operand, indices, updates = ops
    dn = instr.attrs["scatter_dimension_numbers"]
    s = indices.sharding
    cut = _cut_axes(s)
    if not cut:
        raise CannotPartition("its indices are not cut (nothing to split the updates by)")
    if cut - set(dn.scatter_indices_batching_dims):
        raise CannotPartition(
            "its indices are cut along a dimension that is not a batching dimension (devices "
            "would update the same elements)"
        )
    operand_map: list[int | None] = [None] * instr.operands[0].shape.rank
    for o_dim, i_dim in zip(dn.input_batching_dims, dn.scatter_indices_batching_dims, strict=True):
        operand_map[o_dim] = i_dim
    operand_sharding = derive(s, operand_map)
    i_rank = instr.operands[1].shape.rank
    batch_dims = [d for d in range(i_rank) if d != dn.index_vector_dim]
    u_rank = instr.operands[2].shape.rank
    update_scatter = [d for d in range(u_rank) if d not in dn.update_window_dims]
    update_map: list[int | None] = [None] * u_rank
    for u_dim, i_dim in zip(update_scatter, batch_dims, strict=True):
        update_map[u_dim] = i_dim
    update_sharding = derive(s, update_map)
    for value, sharding in zip(instr.operands, (operand_sharding, s, update_sharding), strict=True):
        check_even(value, sharding)
    operands = [
        to(e, operand, operand_sharding, instr.operands[0]),
        to(e, indices, s, instr.operands[1]),
        to(e, updates, update_sharding, instr.operands[2]),
    ]
    return emit(e, instr, operands, operand_sharding)


@rule(Opcode.TUPLE)
def _tuple(e, instr, ops):
    local = e.b.tuple([v.local for v in ops])
    return PValue(local, HloSharding.tuple_of(v.sharding for v in ops))


@rule(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(e, instr, ops):
    (v,) = ops
    index = instr.attrs["index"]
    if v.sharding.is_tuple:
        s = v.sharding.elements[index]
    else:
        s = v.sharding if v.sharding.is_manual else _REPLICATED
    return PValue(e.b.get_tuple_element(v.local, index), s)
