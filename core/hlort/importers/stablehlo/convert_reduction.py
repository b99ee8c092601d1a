"""Ops with scalar computations: reduce, reduce_window, select_and_scatter, sort, map.

Their regions become HLO computations on scalars; variadic forms (several inputs) produce tuples
that are unpacked into the op's results.
"""

from __future__ import annotations

from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.convert_data_movement import unpack
from hlort.ir import attributes as A
from hlort.shape import scalar


def _split(cx: OpContext):
    n = len(cx.operands) // 2
    return cx.operands[:n], cx.operands[n:], n


def _params(inputs, inits):
    return [scalar(i.shape.dtype) for i in inits] + [scalar(x.shape.dtype) for x in inputs]


@converter("stablehlo.reduce")
def _reduce(cx: OpContext):
    inputs, inits, n = _split(cx)
    comp = cx.region_computation(0, "reducer", _params(inputs, inits))
    out = cx.b.reduce(inputs, inits, comp, cx.ints("dimensions"))
    return unpack(cx, out, n)


def window(cx: OpContext, rank: int, sizes_key: str = "window_dimensions") -> list[A.WindowDim]:
    sizes = cx.ints(sizes_key)
    strides = cx.ints("window_strides", (1,) * rank)
    base = cx.ints("base_dilations", (1,) * rank)
    dilations = cx.ints("window_dilations", (1,) * rank)
    padding = cx.pairs("padding", rank)
    if not all(len(v) == rank for v in (sizes, strides, base, dilations)):
        raise cx.invalid(f"window attributes must have {rank} entries each")
    return [
        A.WindowDim(sizes[i], strides[i], padding[i][0], padding[i][1], dilations[i], base[i])
        for i in range(rank)
    ]


@converter("stablehlo.reduce_window")
def _reduce_window(cx: OpContext):
    inputs, inits, n = _split(cx)
    comp = cx.region_computation(0, "reducer", _params(inputs, inits))
    out = cx.b.reduce_window(inputs, inits, comp, window(cx, inputs[0].shape.rank))
    return unpack(cx, out, n)


@converter("stablehlo.select_and_scatter")
def _select_and_scatter(cx: OpContext):
    operand, source, init = cx.operands
    dt = operand.shape.dtype
    select = cx.region_computation(0, "select", [scalar(dt), scalar(dt)])
    scatter = cx.region_computation(1, "scatter", [scalar(source.shape.dtype)] * 2)
    win = window(cx, operand.shape.rank)
    return [cx.b.select_and_scatter(operand, select, win, source, init, scatter)]


@converter("stablehlo.sort")
def _sort(cx: OpContext):
    params = []
    for x in cx.operands:
        params += [scalar(x.shape.dtype)] * 2
    comp = cx.region_computation(0, "comparator", params)
    dim = cx.int("dimension", -1)
    out = cx.b.sort(cx.operands, comp, dim, cx.bool("is_stable"))
    return unpack(cx, out, len(cx.operands))


@converter("stablehlo.map")
def _map(cx: OpContext):
    dims = cx.ints("dimensions", tuple(range(cx.operand(0).shape.rank)))
    if list(dims) != list(range(cx.operand(0).shape.rank)):
        raise cx.unsupported(f"map over dimensions {list(dims)} (only all dimensions)")
    comp = cx.region_computation(0, "map", [scalar(x.shape.dtype) for x in cx.operands])
    return [cx.b.map(cx.operands, comp)]
