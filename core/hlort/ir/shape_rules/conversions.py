"""Shape rules: convert, bitcast-convert and reduce-precision.

convert and bitcast-convert take their result type from the declared shape (the builder supplies
it); the rules check that the dims follow from the operand's.
"""

from __future__ import annotations

from hlort.dtypes import DType
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.shape import ArrayShape, Shape


@shape_rule(Opcode.CONVERT)
def _convert(q: ShapeQuery) -> Shape:
    x = q.array(0)
    result = q.need_declared_array()
    if result.dims != x.dims:
        q.fail(f"converts elements only: the result {result} must have the dims of {x}")
    return result


def bitcast_dims(q: ShapeQuery, x: ArrayShape, to: DType) -> tuple[int, ...]:
    """Result dims of bitcasting ``x`` to ``to`` (XLA: the ratio of widths is a trailing dim)."""
    src = x.dtype
    if src.is_pred or to.is_pred:
        q.fail(f"cannot bitcast {x} to {to}: pred has no defined bit layout; use convert")
    if src.is_complex != to.is_complex:
        q.fail(f"cannot bitcast between complex and real types ({x} to {to}); use real/imag")
    small, big = sorted((src.bits, to.bits))
    if big % small:
        q.fail(f"cannot bitcast {x} to {to}: bit widths {src.bits} and {to.bits} do not divide")
    ratio = big // small
    if src.bits == to.bits:
        return x.dims
    if src.bits > to.bits:
        return x.dims + (ratio,)
    if x.rank == 0 or x.dims[-1] != ratio:
        q.fail(
            f"bitcast of {x} to the wider {to} needs a last dimension of {ratio} "
            f"(= {to.bits} / {src.bits} bits)"
        )
    return x.dims[:-1]


@shape_rule(Opcode.BITCAST_CONVERT)
def _bitcast_convert(q: ShapeQuery) -> Shape:
    x = q.array(0)
    result = q.need_declared_array()
    dims = bitcast_dims(q, x, result.dtype)
    if result.dims != dims:
        q.fail(f"bitcast of {x} to {result.dtype} gives dims {list(dims)}, declared {result}")
    return result


@shape_rule(Opcode.REDUCE_PRECISION)
def _reduce_precision(q: ShapeQuery) -> Shape:
    x = q.array(0)
    if not x.dtype.is_float:
        q.fail(f"the operand must have a floating-point element type, got {x}")
    exponent_bits = q.attr("exponent_bits")
    mantissa_bits = q.attr("mantissa_bits")
    if not isinstance(exponent_bits, int) or exponent_bits < 1:
        q.fail(f"exponent_bits must be an integer >= 1 (0 and inf need one), got {exponent_bits!r}")
    if not isinstance(mantissa_bits, int) or mantissa_bits < 0:
        q.fail(f"mantissa_bits must be an integer >= 0, got {mantissa_bits!r}")
    return x
