"""The arithmetic of a GPU contraction (dot and convolution kernels), as the interpreter does it.

hlort.interpreter.ops.linalg defines it: both operands are converted to one accumulation type,
each product is rounded and then added to a sum that starts at +0, and the sum is converted
once to the result type. The accumulation type (:func:`accumulation_type`): f32 for f16, bf16,
f32 and float8 (and integer operands into a float result), f64 when an operand or the result
is f64; i32 for integer (and pred) operands into integer types of at most 32 bits, i64
otherwise (both wrap: the low bits of the interpreter's int64 sum); c64 for complex
contractions, c128 when a type is c128 or f64, a real operand converted to complex with a +0
imaginary part. A complex product is the interpreter's naive ``(ac - bd) + (ad + bc)i`` (no
fused multiply-add, so NaN and infinity propagate as there). A pred x pred contraction into
pred is XLA's OR of ANDs, held in i32 (no count to wrap).
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm.complex_types import make, parts
from hlort.codegen.llvm.complex_values import convert_complex
from hlort.codegen.llvm.conversions import convert_real
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import constant, value_type
from hlort.dtypes import DType


def accumulation_type(lhs: DType, rhs: DType, out: DType) -> DType:
    """The type a contraction of ``lhs`` x ``rhs`` into ``out`` sums in (module docstring)."""
    types = (lhs, rhs, out)
    if any(t.is_complex for t in types):
        return dtypes.C128 if any(t in (dtypes.C128, dtypes.F64) for t in types) else dtypes.C64
    if lhs.is_float or rhs.is_float or (out.is_float and (lhs.is_integer or rhs.is_integer)):
        return dtypes.F64 if dtypes.F64 in types else dtypes.F32
    if or_of_ands(lhs, rhs, out):
        return dtypes.S32
    if not out.is_integer:  # pred operands into a float result: an exact count, converted
        return dtypes.S64
    return dtypes.S64 if any(t.bits == 64 for t in types) else dtypes.S32


def or_of_ands(lhs: DType, rhs: DType, out: DType) -> bool:
    """Whether the contraction is pred x pred -> pred: ``acc |= a & b``."""
    return lhs.is_pred and rhs.is_pred and out.is_pred


def convert(ctx: IrContext, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """XLA's convert between any two element types (real or complex)."""
    if src.is_complex or dst.is_complex:
        return convert_complex(ctx, x, src, dst)
    return convert_real(ctx, x, src, dst)


class ContractionArith:
    """Zero, conversions and the multiply-add of one contraction's accumulation type."""

    def __init__(self, ctx: IrContext, lhs: DType, rhs: DType, out: DType):
        self.ctx, self.b = ctx, ctx.b
        self.lhs, self.rhs, self.out = lhs, rhs, out
        self.acc_dtype = accumulation_type(lhs, rhs, out)
        self.acc_t = value_type(self.acc_dtype)
        self.or_of_ands = or_of_ands(lhs, rhs, out)
        self.zero = constant(self.acc_dtype, 0)

    def to_acc(self, x: ir.Value, src: DType) -> ir.Value:
        return convert(self.ctx, x, src, self.acc_dtype)

    def to_out(self, acc: ir.Value) -> ir.Value:
        return convert(self.ctx, acc, self.acc_dtype, self.out)

    def multiply_add(self, acc: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        """``acc + x * y`` with the product rounded first (``acc | x & y`` for pred)."""
        b, kind = self.b, self.acc_dtype
        if kind.is_complex:
            (xr, xi), (yr, yi), (ar, ai) = parts(b, x), parts(b, y), parts(b, acc)
            re = b.fsub(b.fmul(xr, yr), b.fmul(xi, yi))
            im = b.fadd(b.fmul(xr, yi), b.fmul(xi, yr))
            return make(b, b.fadd(ar, re), b.fadd(ai, im))
        if kind.is_float:
            return b.fadd(acc, b.fmul(x, y))
        if self.or_of_ands:
            return b.or_(acc, b.and_(x, y))
        return b.add(acc, b.mul(x, y))


__all__ = ["ContractionArith", "accumulation_type", "convert", "or_of_ands"]
