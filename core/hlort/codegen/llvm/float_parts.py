"""Exponent and mantissa steps shared by the f32 and f64 math (float_math*.py, pow_f64.py,
complex_math.py): powers of two, exact scaling, clamping, the special cases of log, and ln 2 in
two pieces. Branch-free, on scalars or vectors of either float type.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, F64, I32, I64

INF = math.inf
NAN = math.nan

LN2_HI = 6.93147180369123816490e-01  # fdlibm: trailing zeros make n * LN2_HI exact
LN2_LO = 1.90821492927058770002e-10


def pow2(ctx: IrContext, k: ir.Value, t: ir.Type) -> ir.Value:
    """2**k for an integer k in the normal exponent range of ``t``."""
    b = ctx.b
    if isinstance(t, ir.DoubleType):
        bits = b.shl(b.add(k, ir.Constant(I64, 1023)), ir.Constant(I64, 52))
        return b.bitcast(bits, F64)
    bits = b.shl(b.add(k, ir.Constant(I32, 127)), ir.Constant(I32, 23))
    return b.bitcast(bits, F32)


def scale(ctx: IrContext, y: ir.Value, n: ir.Value) -> ir.Value:
    """y * 2**n for a float-typed integral n in [-2*bias, 2*bias] (two exact steps)."""
    return _scale_twice(ctx, y, ctx.b.fptosi(n, ctx.int_type_of(y.type)))


def _scale_twice(ctx: IrContext, y: ir.Value, ni: ir.Value) -> ir.Value:
    b = ctx.b
    it = ni.type
    n1 = b.ashr(ni, ctx.const(it, 1))
    n2 = b.sub(ni, n1)
    return b.fmul(b.fmul(y, pow2(ctx, n1, y.type)), pow2(ctx, n2, y.type))


def round_to_int(ctx: IrContext, t: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(k, n): ``t`` rounded to the nearest integer, ties to even, as an i32 and as a float, for
    f32 ``t`` with ``|t| < 2**31``: one cvtps2dq (``llvm.lrint``, in the default rounding mode,
    which nothing here changes) where the target says it is one instruction, else roundeven
    (vrndscaleps, two operations) and a conversion."""
    b = ctx.b
    it = ctx.int_type_of(t.type)
    if ctx.target.math.lrint_instruction:
        k = ctx.overloaded("lrint", it, t, types=(it, t.type))
        return k, b.sitofp(k, t.type)
    n = ctx.intrinsic("roundeven", t)
    return b.fptosi(n, it), n


def exp_scale(ctx: IrContext, y: ir.Value, k: ir.Value, *, normal: bool = False) -> ir.Value:
    """y * 2**k for an exp's ``y`` in [1/2, 2) and integer ``k`` in [-2*bias, 2*bias] (``normal``:
    in the normal exponent range, where one product by 2**k is exact), by scale's two steps.

    Not by llvm.ldexp, though on AVX-512 that is one vscalefps and gives the same bits: vscalefps
    takes a microcode assist whenever its result is subnormal or underflows (exp of f32 -1000s,
    2**20 of them, one thread: 0.67 -> 8.5 ms; softmax's masked scores are such inputs), where
    the second product here underflows to zero at full speed."""
    if normal:
        return ctx.b.fmul(y, pow2(ctx, k, y.type))
    return _scale_twice(ctx, y, k)


def clamp(ctx: IrContext, x: ir.Value, lo: float, hi: float) -> ir.Value:
    """x clamped to [lo, hi]; NaN becomes 0 (callers restore NaN at the end)."""
    b = ctx.b
    t = x.type
    x = b.select(ctx.is_nan(x), ctx.f(t, 0.0), x)
    x = b.select(b.fcmp_ordered("<", x, ctx.f(t, lo)), ctx.f(t, lo), x)
    return b.select(b.fcmp_ordered(">", x, ctx.f(t, hi)), ctx.f(t, hi), x)


def keep_nan(ctx: IrContext, x: ir.Value, result: ir.Value) -> ir.Value:
    return ctx.b.select(ctx.is_nan(x), x, result)


def log_specials(ctx: IrContext, x: ir.Value, result: ir.Value) -> ir.Value:
    """log(x<0) = NaN, log(+-0) = -inf, log(inf) = inf, log(NaN) = NaN."""
    b = ctx.b
    t = x.type
    zero = ctx.f(t, 0.0)
    result = b.select(b.fcmp_ordered("==", x, ctx.f(t, INF)), ctx.f(t, INF), result)
    result = b.select(b.fcmp_ordered("==", x, zero), ctx.f(t, -INF), result)
    result = b.select(b.fcmp_ordered("<", x, zero), ctx.f(t, NAN), result)
    return keep_nan(ctx, x, result)


def split_mantissa(ctx: IrContext, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(m, e) with x = m * 2**e, m in [sqrt(1/2), sqrt(2)), for finite x > 0 (subnormals too)."""
    b = ctx.b
    t = x.type
    wide = isinstance(t, ir.DoubleType)
    it = I64 if wide else I32
    mant_bits, bias, half_bits = (52, 1022, 0x3FE0000000000000) if wide else (23, 126, 0x3F000000)
    tiny = 2.0 ** (-1022 if wide else -126)
    sub = b.fcmp_ordered("<", x, ctx.f(t, tiny))
    xs = b.select(sub, b.fmul(x, ctx.f(t, 2.0**mant_bits)), x)
    bits = b.bitcast(xs, it)
    exp_mask = (1 << (64 - 1 - mant_bits if wide else 8)) - 1
    e = b.sub(
        b.and_(b.lshr(bits, ir.Constant(it, mant_bits)), ir.Constant(it, exp_mask)),
        ir.Constant(it, bias),
    )
    e = b.sub(e, b.select(sub, ir.Constant(it, mant_bits), ir.Constant(it, 0)))
    m_bits = b.or_(b.and_(bits, ir.Constant(it, (1 << mant_bits) - 1)), ir.Constant(it, half_bits))
    m = b.bitcast(m_bits, t)
    small = b.fcmp_ordered("<", m, ctx.f(t, 0.707106781186547524))
    e = b.sub(e, b.zext(small, it))
    m = b.select(small, b.fadd(m, m), m)
    return m, b.sitofp(e, t)
