"""StableHLO collectives -> hlort's collective ops (all_reduce, all_gather, reduce_scatter,
all_to_all, collective_permute, collective_broadcast), as XLA's StableHLO -> HLO lowering gives.

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

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.spmd import _rows
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, TupleShape, scalar


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
    attrs = _common(cx, global_ids=False)
    return [cx.b.op(Opcode.COLLECTIVE_BROADCAST, [cx.operand(0)], **attrs)]


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
