"""Dynamic-shape ops whose shapes are in fact static.

hlort has static shapes only. These ops are accepted when their result type is static (checked
before any converter runs) and their shape operands fold to constants; they then become the
static op (broadcast, iota, reshape, pad, gather, convolution, slice). Otherwise they raise
UNIMPLEMENTED naming the operand that is not constant.
"""

from __future__ import annotations

import numpy as np

from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.convert_data_movement import (
    broadcast_in_dim,
    gather_dimension_numbers,
)
from hlort.importers.stablehlo.convert_linalg import convolution


def _check_shape_operand(cx: OpContext, index: int, dims) -> None:
    value = cx.constant_value(cx.operand(index))
    if value is not None and [int(v) for v in value.reshape(-1)] != list(dims):
        raise cx.invalid(
            f"shape operand {index} is {value.tolist()}, but the result type is "
            f"{cx.op.result_types[0]}"
        )


@converter("stablehlo.dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim(cx: OpContext):
    dims = cx.result_array().dims
    _check_shape_operand(cx, 1, dims)
    return [broadcast_in_dim(cx, cx.operand(0), dims, cx.ints("broadcast_dimensions"))]


@converter("stablehlo.dynamic_iota")
def _dynamic_iota(cx: OpContext):
    shape = cx.result_array()
    _check_shape_operand(cx, 0, shape.dims)
    return [cx.b.iota(shape, cx.int("iota_dimension"))]


@converter("stablehlo.dynamic_reshape")
def _dynamic_reshape(cx: OpContext):
    dims = cx.result_array().dims
    _check_shape_operand(cx, 1, dims)
    x = cx.operand(0)
    return [x if x.shape.dims == dims else cx.b.reshape(x, dims)]


@converter("stablehlo.dynamic_pad")
def _dynamic_pad(cx: OpContext):
    low = cx.require_constant(2, "edge_padding_low").reshape(-1)
    high = cx.require_constant(3, "edge_padding_high").reshape(-1)
    interior = cx.require_constant(4, "interior_padding").reshape(-1)
    config = [(int(a), int(b), int(c)) for a, b, c in zip(low, high, interior, strict=False)]
    return [cx.b.pad(cx.operand(0), cx.operand(1), config)]


@converter("stablehlo.dynamic_gather")
def _dynamic_gather(cx: OpContext):
    sizes = [int(v) for v in cx.require_constant(2, "slice_sizes").reshape(-1)]
    dnums = gather_dimension_numbers(cx.attr("dimension_numbers"))
    return [cx.b.gather(cx.operand(0), cx.operand(1), dnums, sizes, cx.bool("indices_are_sorted"))]


@converter("stablehlo.dynamic_conv")
def _dynamic_conv(cx: OpContext):
    padding = cx.require_constant(2, "padding").reshape(-1, 2)
    return [convolution(cx, [(int(lo), int(hi)) for lo, hi in padding])]


@converter("stablehlo.real_dynamic_slice")
def _real_dynamic_slice(cx: OpContext):
    x = cx.operand(0)
    start = cx.constant_value(cx.operand(1))
    limit = cx.constant_value(cx.operand(2))
    strides = cx.constant_value(cx.operand(3))
    if start is not None and limit is not None and strides is not None:
        return [
            cx.b.slice(
                x, [int(v) for v in start], [int(v) for v in limit], [int(v) for v in strides]
            )
        ]
    if strides is not None and np.all(strides == 1):
        sizes = cx.result_array().dims
        starts = [
            cx.b.reshape(cx.b.slice(cx.operand(1), [i], [i + 1]), ()) for i in range(x.shape.rank)
        ]
        return [cx.b.dynamic_slice(x, starts, sizes)]
    raise cx.unsupported("start/limit/strides are not compile-time constants")


@converter("stablehlo.get_dimension_size")
def _get_dimension_size(cx: OpContext):
    x = cx.operand(0)
    dim = cx.int("dimension")
    return [cx.b.constant(np.array(x.shape.dims[dim], cx.result_dtype().numpy))]
