"""Data movement: broadcast_in_dim, reshape, transpose, slice, concatenate, pad, reverse,
dynamic_slice, dynamic_update_slice, gather, scatter, tuple, get_tuple_element.

``broadcast_in_dim`` may stretch size-1 operand dimensions in StableHLO; HLO's broadcast may not,
so those dimensions are reshaped away first.
"""

from __future__ import annotations

from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, as_ints, converter
from hlort.ir import attributes as A
from hlort.shape import scalar


@converter("stablehlo.broadcast_in_dim")
def _broadcast_in_dim(cx: OpContext):
    return [
        broadcast_in_dim(cx, cx.operand(0), cx.result_array().dims, cx.ints("broadcast_dimensions"))
    ]


def broadcast_in_dim(cx: OpContext, x, out_dims, dims):
    """StableHLO broadcast_in_dim semantics (size-1 dimensions expand) in HLO terms."""
    out_dims = tuple(out_dims)
    keep = [i for i, d in enumerate(dims) if x.shape.dims[i] == out_dims[d]]
    if len(keep) != len(dims):
        for i, d in enumerate(dims):
            if x.shape.dims[i] not in (1, out_dims[d]):
                raise cx.invalid(
                    f"cannot broadcast dimension {i} of {x.shape} (size "
                    f"{x.shape.dims[i]}) to size {out_dims[d]}"
                )
        x = cx.b.reshape(x, [x.shape.dims[i] for i in keep])
        dims = [dims[i] for i in keep]
    if x.shape.dims == out_dims and list(dims) == list(range(len(out_dims))):
        return x
    return cx.b.broadcast(x, out_dims, dims)


@converter("stablehlo.broadcast")
def _broadcast(cx: OpContext):
    """The deprecated ``broadcast``: new leading dimensions of sizes ``broadcast_sizes``."""
    x = cx.operand(0)
    sizes = cx.ints("broadcast_sizes")
    out = tuple(sizes) + x.shape.dims
    return [cx.b.broadcast(x, out, list(range(len(sizes), len(out))))]


@converter("stablehlo.reshape")
def _reshape(cx: OpContext):
    x = cx.operand(0)
    dims = cx.result_array().dims
    return [x if x.shape.dims == dims else cx.b.reshape(x, dims)]


@converter("stablehlo.transpose")
def _transpose(cx: OpContext):
    return [cx.b.transpose(cx.operand(0), cx.ints("permutation"))]


@converter("stablehlo.slice")
def _slice(cx: OpContext):
    x = cx.operand(0)
    starts = cx.ints("start_indices")
    limits = cx.ints("limit_indices")
    strides = cx.ints("strides", (1,) * len(starts))
    return [cx.b.slice(x, starts, limits, strides)]


@converter("stablehlo.concatenate")
def _concatenate(cx: OpContext):
    if len(cx.operands) == 1:
        return [cx.operand(0)]
    return [cx.b.concatenate(cx.operands, cx.int("dimension"))]


@converter("stablehlo.pad")
def _pad(cx: OpContext):
    x, value = cx.operands
    low = cx.ints("edge_padding_low")
    high = cx.ints("edge_padding_high")
    interior = cx.ints("interior_padding", (0,) * len(low))
    return [cx.b.pad(x, value, list(zip(low, high, interior, strict=False)))]


@converter("stablehlo.reverse")
def _reverse(cx: OpContext):
    dims = cx.ints("dimensions")
    return [cx.b.reverse(cx.operand(0), dims) if dims else cx.operand(0)]


@converter("stablehlo.dynamic_slice")
def _dynamic_slice(cx: OpContext):
    x, *starts = cx.operands
    return [cx.b.dynamic_slice(x, same_index_type(cx, starts), cx.ints("slice_sizes"))]


@converter("stablehlo.dynamic_update_slice")
def _dynamic_update_slice(cx: OpContext):
    x, update, *starts = cx.operands
    return [cx.b.dynamic_update_slice(x, update, same_index_type(cx, starts))]


def same_index_type(cx: OpContext, starts):
    """HLO wants one integer type for all start indices; StableHLO allows a mix."""
    kinds = {s.shape.dtype for s in starts}
    if len(kinds) <= 1:
        return list(starts)
    return [s if s.shape.dtype.name == "s64" else cx.b.convert(s, "s64") for s in starts]


def _dims(fields: dict, key: str) -> tuple[int, ...]:
    value = fields.get(key, ())
    return as_ints(value, lambda msg: ValueError(f"{key}: {msg}"))


def gather_dimension_numbers(value) -> A.GatherDimensionNumbers:
    f = value.fields if isinstance(value, ast.StructAttr) else {}
    return A.GatherDimensionNumbers(
        offset_dims=_dims(f, "offset_dims"),
        collapsed_slice_dims=_dims(f, "collapsed_slice_dims"),
        start_index_map=_dims(f, "start_index_map"),
        index_vector_dim=int(f.get("index_vector_dim", 0)),
        operand_batching_dims=_dims(f, "operand_batching_dims"),
        start_indices_batching_dims=_dims(f, "start_indices_batching_dims"),
    )


def scatter_dimension_numbers(value) -> A.ScatterDimensionNumbers:
    f = value.fields if isinstance(value, ast.StructAttr) else {}
    return A.ScatterDimensionNumbers(
        update_window_dims=_dims(f, "update_window_dims"),
        inserted_window_dims=_dims(f, "inserted_window_dims"),
        scatter_dims_to_operand_dims=_dims(f, "scatter_dims_to_operand_dims"),
        index_vector_dim=int(f.get("index_vector_dim", 0)),
        input_batching_dims=_dims(f, "input_batching_dims"),
        scatter_indices_batching_dims=_dims(f, "scatter_indices_batching_dims"),
    )


@converter("stablehlo.gather")
def _gather(cx: OpContext):
    operand, indices = cx.operands
    dnums = gather_dimension_numbers(cx.attr("dimension_numbers"))
    return [
        cx.b.gather(operand, indices, dnums, cx.ints("slice_sizes"), cx.bool("indices_are_sorted"))
    ]


@converter("stablehlo.scatter")
def _scatter(cx: OpContext):
    n = (len(cx.operands) - 1) // 2
    inputs = cx.operands[:n]
    indices = cx.operands[n]
    updates = cx.operands[n + 1 :]
    params = [scalar(x.shape.dtype) for x in inputs] * 2
    comp = cx.region_computation(0, "scatter_update", params)
    dnums = scatter_dimension_numbers(cx.attr("scatter_dimension_numbers"))
    out = cx.b.scatter(
        inputs,
        indices,
        updates,
        comp,
        dnums,
        cx.bool("indices_are_sorted"),
        cx.bool("unique_indices"),
    )
    return unpack(cx, out, n)


def unpack(cx: OpContext, instr, n: int):
    """``n`` results of a tuple-shaped instruction (the instruction itself when ``n`` is 1)."""
    if n == 1 and not instr.shape.is_tuple:
        return [instr]
    return [cx.b.get_tuple_element(instr, i) for i in range(n)]


@converter("stablehlo.tuple")
def _tuple(cx: OpContext):
    return [cx.b.tuple(cx.operands)]


@converter("stablehlo.get_tuple_element")
def _get_tuple_element(cx: OpContext):
    return [cx.b.get_tuple_element(cx.operand(0), cx.int("index"))]
