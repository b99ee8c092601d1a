"""StableHLO collectives -> hlort's collective ops (all_reduce, all_gather, reduce_scatter,
all_to_all, collective_permute, collective_broadcast), as XLA's StableHLO -> HLO lowering gives;
collective_reduce and collective_broadcast's dynamic root (not in XLA) are lowered to them.

``channel_handle`` with ``handle > 0`` becomes ``channel_id``; ``replica_groups`` (a dense N x M
tensor, ragged groups padded with -1) the explicit groups; ``use_global_device_ids`` stays.
all_to_all with ``split_dimension != concat_dimension`` is XLA's all-to-all along the split
dimension followed by the reshape/transpose that moves the received pieces to the concat
dimension. Inside ``interpreter.run_parallel`` the collectives are handled by
:mod:`hlort.importers.stablehlo.spmd` instead (that grid is flattened into one program).
The module's ``mhlo.num_replicas`` / ``mhlo.num_partitions`` become ``module.config``
(convert_module reads them).
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.spmd import _rows
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, TupleShape, array, scalar


def _common(cx: OpContext, groups: bool = True, global_ids: bool = True) -> dict:
    attrs: dict = {}
    handle = cx.attr("channel_handle", None)
    channel = int(handle.fields.get("handle", 0)) if isinstance(handle, ast.StructAttr) else 0
    if channel > 0:
        attrs["channel_id"] = channel
    if groups:
        raw = cx.attr("replica_groups", None)
        attrs["replica_groups"] = tuple(tuple(r) for r in _rows(raw)) if raw is not None else ()
    if global_ids and cx.bool("use_global_device_ids", False):
        attrs["use_global_device_ids"] = True
    return attrs


def _results(cx: OpContext, instr: Instruction) -> list[Instruction]:
    if isinstance(instr.shape, TupleShape):
        return [cx.b.get_tuple_element(instr, i) for i in range(len(instr.shape.elements))]
    return [instr]


def _declared(cx: OpContext):
    shapes = [cx.result_array(i) for i in range(len(cx.op.result_types))]
    return shapes[0] if len(shapes) == 1 else TupleShape(tuple(shapes))


def _reducer(cx: OpContext, name: str):
    dt = cx.operand(0).shape.dtype
    return cx.region_computation(0, name, [scalar(dt), scalar(dt)])


@converter("stablehlo.all_reduce")
def _all_reduce(cx: OpContext):
    attrs = _common(cx)
    attrs["to_apply"] = _reducer(cx, "all_reduce")
    return _results(cx, cx.b.op(Opcode.ALL_REDUCE, cx.operands, **attrs))


@converter("stablehlo.all_gather")
def _all_gather(cx: OpContext):
    attrs = _common(cx)
    attrs["dimensions"] = (cx.int("all_gather_dim"),)
    return _results(cx, cx.b.op(Opcode.ALL_GATHER, cx.operands, _declared(cx), **attrs))


@converter("stablehlo.reduce_scatter")
def _reduce_scatter(cx: OpContext):
    attrs = _common(cx)
    attrs["dimensions"] = (cx.int("scatter_dimension"),)
    attrs["to_apply"] = _reducer(cx, "reduce_scatter")
    return _results(cx, cx.b.op(Opcode.REDUCE_SCATTER, cx.operands, _declared(cx), **attrs))


@converter("stablehlo.collective_permute")
def _collective_permute(cx: OpContext):
    attrs = _common(cx, groups=False, global_ids=False)
    raw = cx.attr("source_target_pairs", None)
    attrs["source_target_pairs"] = tuple(tuple(p) for p in _rows(raw)) if raw is not None else ()
    return [cx.b.op(Opcode.COLLECTIVE_PERMUTE, [cx.operand(0)], **attrs)]


@converter("stablehlo.collective_broadcast")
def _collective_broadcast(cx: OpContext):
    """One collective-broadcast per data operand; with ``has_dynamic_root`` the last operand
    holds, per data operand, the index in each group of the member that sends (a constant:
    each group is rotated so that member comes first, as XLA's op takes the first)."""
    attrs = _common(cx, global_ids=False)
    data = list(cx.operands)
    if not cx.bool("has_dynamic_root", False):
        return [cx.b.op(Opcode.COLLECTIVE_BROADCAST, [x], **attrs) for x in data]
    data = data[:-1]
    groups = attrs["replica_groups"]
    if not groups:
        raise cx.unsupported("a dynamic root with implicit groups (list replica_groups)")
    root_operand = cx.operands[-1]
    known = cx.constant_value(root_operand)
    out = []
    for i, x in enumerate(data):
        if known is not None:
            flat = [int(v) for v in np.asarray(known).reshape(-1)]
            out.append(_broadcast_from(cx, x, attrs, flat[i] if i < len(flat) else flat[0]))
            continue
        # a root known only at run time: one broadcast per possible member, then select
        b = cx.b
        if root_operand.shape.rank == 0:
            root = root_operand
        else:
            count = root_operand.shape.dims[0]
            index = b.constant(np.array(i if i < count else 0, np.int32))
            root = b.reshape(
                b.op(
                    Opcode.DYNAMIC_SLICE,
                    [root_operand, index],
                    array(root_operand.shape.dtype, (1,)),
                    dynamic_slice_sizes=(1,),
                ),
                (),
            )
        result = _broadcast_from(cx, x, attrs, 0)
        for r in range(1, min(len(g) for g in groups)):
            here = b.compare(root, b.constant(np.array(r, root.shape.dtype.numpy)), "EQ")
            pick = b.broadcast(here, x.shape.dims, []) if x.shape.rank else here
            result = b.select(pick, _broadcast_from(cx, x, attrs, r), result)
        out.append(result)
    return out


def _broadcast_from(cx: OpContext, x: Instruction, attrs: dict, root: int) -> Instruction:
    """collective-broadcast from member ``root`` of each group (XLA's op sends from the first:
    each group is rotated)."""
    groups = attrs["replica_groups"]
    if any(root >= len(g) for g in groups):
        raise cx.invalid(f"root index {root} is past the end of a group of {groups}")
    rotated = tuple(g[root:] + g[:root] for g in groups)
    return cx.b.op(Opcode.COLLECTIVE_BROADCAST, [x], **{**attrs, "replica_groups": rotated})


@converter("stablehlo.collective_reduce")
def _collective_reduce(cx: OpContext):
    """The reduction to each group's first member; the others get zeros. Lowered as an
    all-reduce masked by the copy's replica id (cross-replica mode only: with a channel the
    mode is over partitions, which an all-reduce cannot express without the counts)."""
    attrs = _common(cx, global_ids=False)
    if "channel_id" in attrs:
        raise cx.unsupported("collective_reduce with a channel_handle (cross-partition mode)")
    groups = attrs["replica_groups"] or ((0,),)
    if not attrs["replica_groups"]:
        raise cx.unsupported("collective_reduce with implicit groups (list replica_groups)")
    b = cx.b
    reduced = _results(
        cx, b.op(Opcode.ALL_REDUCE, cx.operands, **attrs, to_apply=_reducer(cx, "reducer"))
    )
    size = max(i for g in groups for i in g) + 1
    table = np.zeros(size, np.bool_)
    table[[g[0] for g in groups]] = True
    mine = b.op(Opcode.REPLICA_ID, ())
    lookup = b.op(
        Opcode.DYNAMIC_SLICE,
        [b.constant(table), mine],
        array(dtypes.PRED, (1,)),
        dynamic_slice_sizes=(1,),
    )
    is_root = b.reshape(lookup, ())
    out = []
    for value in reduced:
        zero = b.constant(np.zeros((), value.shape.dtype.numpy))
        zeros = b.broadcast(zero, value.shape.dims, []) if value.shape.rank else zero
        pick = b.broadcast(is_root, value.shape.dims, []) if value.shape.rank else is_root
        out.append(b.select(pick, value, zeros))
    return out


@converter("stablehlo.all_to_all")
def _all_to_all(cx: OpContext):
    attrs = _common(cx, global_ids=False)
    split, concat = cx.int("split_dimension"), cx.int("concat_dimension")
    count = cx.int("split_count")
    return [_one_all_to_all(cx, x, split, concat, count, attrs) for x in cx.operands]


def _one_all_to_all(
    cx: OpContext, x: Instruction, split: int, concat: int, count: int, attrs: dict
) -> Instruction:
    b = cx.b
    shape = x.shape
    if not isinstance(shape, ArrayShape) or not 0 <= split < shape.rank:
        raise cx.invalid(f"split_dimension {split} out of range for {shape}")
    if not 0 <= concat < shape.rank or count < 1 or shape.dims[split] % count:
        raise cx.invalid(
            f"split_count {count} must divide dimension {split} of {shape} and concat_dimension "
            f"{concat} must name a dimension"
        )
    moved = b.op(Opcode.ALL_TO_ALL, [x], dimensions=(split,), **attrs)
    if split == concat:
        return moved
    # the pieces from member j sit at [j * d/n, (j + 1) * d/n) of the split dimension: make that
    # j an axis of its own and put it just before the concat dimension, then merge them
    dims = list(shape.dims)
    piece = dims[split] // count
    expanded = dims[:split] + [count, piece] + dims[split + 1 :]
    t = b.reshape(moved, expanded)
    axes = list(range(len(expanded)))
    j_axis = split
    c_axis = concat if concat < split else concat + 1
    order = [a for a in axes if a != j_axis]
    order.insert(order.index(c_axis), j_axis)
    t = b.transpose(t, order)
    final = list(dims)
    final[split] = piece
    final[concat] = dims[concat] * count
    return b.reshape(t, final)
