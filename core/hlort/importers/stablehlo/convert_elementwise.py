"""Elementwise ops, constants, iota, compare, select, clamp and the conversions.

StableHLO's elementwise ops map one-to-one to HLO opcodes. The few StableHLO relaxations HLO does
not have (a scalar predicate for select, scalar bounds for clamp) become explicit broadcasts.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext, converter
from hlort.importers.stablehlo.dense_literals import is_lazy_splat
from hlort.importers.stablehlo.types import to_shape
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape

# StableHLO's name (hyphens as underscores) -> the opcode, for the op table's one-to-one ops
ELEMENTWISE: dict[str, Opcode] = {
    op.value.replace("-", "_"): op for op in Opcode if op.info.stablehlo
}


def _elementwise(cx: OpContext):
    opcode = ELEMENTWISE[cx.op.name.split(".", 1)[1]]
    if opcode in (Opcode.MAXIMUM, Opcode.MINIMUM) and cx.operand(0).shape.dtype.is_complex:
        return [_complex_extremum(cx, opcode is Opcode.MAXIMUM)]
    return [cx.b.op(opcode, cx.operands)]


def _complex_extremum(cx: OpContext, maximum: bool):
    """StableHLO orders complex numbers lexicographically by (real, imag) for max/min."""
    b = cx.b
    x, y = cx.operands
    direction = "GT" if maximum else "LT"
    rx, ry, ix, iy = b.real(x), b.real(y), b.imag(x), b.imag(y)
    same_real = b.compare(rx, ry, "EQ")
    wins = b.or_(b.compare(rx, ry, direction), b.and_(same_real, b.compare(ix, iy, direction)))
    equal = b.and_(same_real, b.compare(ix, iy, "EQ"))
    return b.select(b.or_(wins, equal), x, y)


converter(*(f"stablehlo.{name}" for name in ELEMENTWISE))(_elementwise)


@converter("stablehlo.constant")
def _constant(cx: OpContext):
    dense = cx.attr("value")
    if not isinstance(dense, ast.DenseAttr):
        raise cx.invalid(f"value must be a dense literal, got {dense!r}")
    if dense.value is None:
        to_shape(dense.type)  # names the unsupported type
        raise cx.unsupported(f"literal of type {dense.type}")
    if is_lazy_splat(dense.value):  # one value, broadcast: never materialized here
        scalar = cx.b.constant(np.array(dense.value[(0,) * dense.value.ndim]))
        return [cx.b.broadcast(scalar, dense.value.shape, ())]
    return [cx.b.constant(dense.value)]


@converter("stablehlo.iota")
def _iota(cx: OpContext):
    return [cx.b.iota(cx.result_array(), cx.int("iota_dimension"))]


@converter("stablehlo.compare")
def _compare(cx: OpContext):
    direction = cx.enum("comparison_direction")
    kind = cx.enum("compare_type", None)
    if kind == "NOTYPE":
        kind = None
    if direction not in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        raise cx.invalid(f"has an unknown comparison direction {direction!r}")
    if kind not in (None, "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"):
        raise cx.invalid(f"has an unknown comparison type {kind!r}")
    return [cx.b.compare(cx.operand(0), cx.operand(1), direction, kind)]


@converter("stablehlo.select")
def _select(cx: OpContext):
    pred, on_true, on_false = cx.operands
    if pred.shape.rank == 0 and on_true.shape.rank > 0:
        pred = cx.b.broadcast(pred, on_true.shape.dims, [])
    return [cx.b.select(pred, on_true, on_false)]


@converter("stablehlo.clamp")
def _clamp(cx: OpContext):
    low, x, high = cx.operands
    return [cx.b.clamp(cx.broadcast_to(low, x.shape), x, cx.broadcast_to(high, x.shape))]


@converter("stablehlo.convert")
def _convert(cx: OpContext):
    x = cx.operand(0)
    target = cx.result_dtype()
    if x.shape.dtype == target:
        return [x]
    if x.shape.dtype.is_complex and not target.is_complex:
        x = cx.b.real(x)  # StableHLO: complex -> real keeps the real part
        if x.shape.dtype == target:
            return [x]
    return [cx.b.convert(x, target)]


@converter("stablehlo.bitcast_convert")
def _bitcast_convert(cx: OpContext):
    x = cx.operand(0)
    target = cx.result_dtype()
    if x.shape.dtype == target:
        return [x]
    if x.shape.dtype.is_pred:
        return [_bits_to_value(cx, x, target)]
    if target.is_pred:
        return [_value_to_bits(cx, x)]
    return [cx.b.bitcast_convert(x, target)]


def _unsigned(bits: int) -> DType:
    return {4: dtypes.U4, 8: dtypes.U8, 16: dtypes.U16, 32: dtypes.U32, 64: dtypes.U64}[bits]


def _bits_to_value(cx: OpContext, x, target: DType):
    """i1[..., n] -> an n-bit value: element i is bit i (least significant first)."""
    b = cx.b
    n = x.shape.dims[-1]
    wide = _unsigned(n)
    ones = b.convert(x, wide)
    shifts = b.iota(ArrayShape(wide, x.shape.dims), x.shape.rank - 1)
    bits = b.op(Opcode.SHIFT_LEFT, (ones, shifts))
    zero = b.constant(np.zeros((), wide.numpy))
    packed = b.reduce(bits, zero, b.scalar_computation(Opcode.OR, wide), [x.shape.rank - 1])
    return packed if target == wide else b.bitcast_convert(packed, target)


def _value_to_bits(cx: OpContext, x):
    """An n-bit value -> i1[..., n], bit i at element i."""
    b = cx.b
    n = x.shape.dtype.bits
    wide = _unsigned(n)
    value = x if x.shape.dtype == wide else b.bitcast_convert(x, wide)
    dims = x.shape.dims + (n,)
    spread = b.broadcast(value, dims, list(range(x.shape.rank)))
    shifts = b.iota(ArrayShape(wide, dims), len(dims) - 1)
    one = b.broadcast(b.constant(np.ones((), wide.numpy)), dims, [])
    bit = b.and_(b.op(Opcode.SHIFT_RIGHT_LOGICAL, (spread, shifts)), one)
    return b.compare(bit, b.broadcast(b.constant(np.zeros((), wide.numpy)), dims, []), "NE")


@converter("stablehlo.uniform_quantize")
def _uniform_quantize(cx: OpContext):
    from hlort.importers.stablehlo.quantization import dequantize, quant_of, quantize

    x = cx.operand(0)
    source = quant_of(cx.scope.type_of(cx.op.operands[0]))
    if source is not None:
        x = dequantize(cx.b, x, source)
    target = quant_of(cx.op.result_types[0])
    if target is None:
        raise cx.invalid(f"result must be a quantized type, got {cx.op.result_types[0]}")
    return [quantize(cx.b, x, target)]


@converter("stablehlo.uniform_dequantize")
def _uniform_dequantize(cx: OpContext):
    from hlort.importers.stablehlo.quantization import dequantize, quant_of

    source = quant_of(cx.scope.type_of(cx.op.operands[0]))
    if source is None:
        raise cx.invalid("operand must be a quantized type")
    return [dequantize(cx.b, cx.operand(0), source)]


@converter("stablehlo.reduce_precision")
def _reduce_precision(cx: OpContext):
    return [cx.b.reduce_precision(cx.operand(0), cx.int("exponent_bits"), cx.int("mantissa_bits"))]


@converter("stablehlo.replica_id")
def _replica_id(cx: OpContext):
    from hlort.importers.stablehlo.spmd import process_constant

    return process_constant(cx, 0) or [cx.b.op(Opcode.REPLICA_ID, ())]


@converter("stablehlo.partition_id")
def _partition_id(cx: OpContext):
    from hlort.importers.stablehlo.spmd import process_constant

    return process_constant(cx, 1) or [cx.b.op(Opcode.PARTITION_ID, ())]
