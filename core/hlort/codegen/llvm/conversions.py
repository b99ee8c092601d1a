"""Converts between real element types on register values, as XLA and the interpreter do.

Float -> int saturates with NaN -> 0 (``fptosi.sat``); int -> narrow float and f64 -> narrow
float round once (through an f64 with a sticky bit, or f32 rounded to odd); float8 NaNs become
canonical first. Complex converts build on these (complex_values.convert_complex).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm.float8 import canonical_float8_nan, is_float8
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, F64, NARROW, round_to, value_type
from hlort.codegen.llvm.wide_int_rounding import int64_to_f64_sticky
from hlort.dtypes import DType


def _is_float(dtype: DType) -> bool:
    return dtype.is_float


def convert_real(ctx: IrContext, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """XLA's convert between real types (the interpreter's conversions module)."""
    b = ctx.b
    if src is dst:
        return x
    if is_float8(src):
        x = canonical_float8_nan(b, src, x)
    vt = value_type(dst)
    if dst.is_pred:
        if _is_float(src):
            return b.fcmp_unordered("!=", x, ctx.f(x.type, 0.0))
        return b.icmp_unsigned("!=", x, ir.Constant(x.type, 0))
    if src.is_pred:
        return b.uitofp(x, vt) if _is_float(dst) else b.zext(x, vt)
    if dst.is_integer:
        if _is_float(src):
            name = "fptosi.sat" if dst.is_signed_integer else "fptoui.sat"
            fn = ctx.function(f"llvm.{name}.i{dst.bits}.{_fsuffix(x.type)}", vt, [x.type])
            return b.call(fn, [x])
        if dst.bits < src.bits:
            return b.trunc(x, vt)
        if dst.bits > src.bits:
            return b.sext(x, vt) if src.is_signed_integer else b.zext(x, vt)
        return x
    # to a float
    if src.is_integer:
        if dst in NARROW and src.bits == 64:  # rounded once, as the interpreter rounds
            return _f64_to_narrow(ctx, int64_to_f64_sticky(ctx, x, src.is_signed_integer), dst)
        if dst is dtypes.F16:
            h = b.sitofp(x, ir.HalfType()) if src.is_signed_integer else b.uitofp(x, ir.HalfType())
            return b.fpext(h, F32)
        if dst in NARROW:  # bf16, float8: exact in f64, then rounded once
            d = b.sitofp(x, F64) if src.is_signed_integer else b.uitofp(x, F64)
            return _f64_to_narrow(ctx, d, dst)
        return b.sitofp(x, vt) if src.is_signed_integer else b.uitofp(x, vt)
    if src is dtypes.F64:
        if dst in NARROW:
            return _f64_to_narrow(ctx, x, dst)
        return b.fptrunc(x, F32)
    # src is f32 or narrow (held as f32)
    if dst is dtypes.F64:
        return b.fpext(x, F64)
    return round_to(b, dst, x)


def _fsuffix(t: ir.Type) -> str:
    return "f64" if isinstance(t, ir.DoubleType) else "f32"


def _f64_to_narrow(ctx: IrContext, x: ir.Value, dst: DType) -> ir.Value:
    """f64 -> f16/bf16 rounded once: via f32 rounded to odd, then to nearest even."""
    b = ctx.b
    f = b.fptrunc(x, F32)
    back = b.fpext(f, F64)
    inexact = b.fcmp_ordered("!=", back, x)
    bits = b.bitcast(f, ir.IntType(32))
    even = b.icmp_unsigned(
        "==", b.and_(bits, ir.Constant(ir.IntType(32), 1)), ir.Constant(ir.IntType(32), 0)
    )
    # step the magnitude toward x: +1 on the bits when |back| < |x|, else -1
    toward_larger = b.fcmp_ordered("<", ctx.fabs(back), ctx.fabs(x))
    step = b.select(toward_larger, ir.Constant(ir.IntType(32), 1), ir.Constant(ir.IntType(32), -1))
    odd = b.bitcast(b.add(bits, step), F32)
    is_inf = b.fcmp_ordered("==", ctx.fabs(f), ctx.f(F32, math.inf))
    finite_x = b.fcmp_ordered("<", ctx.fabs(x), ctx.f(F64, math.inf))
    largest = ctx.copysign(ctx.f(F32, 3.4028234663852886e38), f)
    f = b.select(b.and_(b.and_(inexact, even), b.not_(is_inf)), odd, f)
    f = b.select(b.and_(is_inf, finite_x), largest, f)
    return round_to(b, dst, f)
