"""All-f32 logarithms carried in two floats: log1p and pow for targets where f64 is slow.

``MathPolicy(f32_via_f64=False)`` (GPU targets) evaluates these in f32 only. pow needs log2|x|
to about 2**-33 (its error is multiplied by y log2|x|, up to 150), so log is table-driven and
kept as an unevaluated sum hi + lo of two f32 (the error-free steps of double_double.py work on
any float type): x = 2**k z with z in [0.70, 1.40), r = z * invc - 1 is exact as a two-float
(z * invc by one FMA, then Sterbenz), and log(1 + r) for |r| < 1/32 is r - r**2/2 in two
floats plus a fitted f32 tail. Branch-free: the table row is a load at a computed index.
Measured (plugins/cpu/tests/test_transcendental_ulp_f32.py): log1p and pow <= 1 ulp.
"""

from __future__ import annotations

import math
import struct

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm.float_parts import INF, NAN, clamp, scale
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, I32, I64

_OFF = 0x3F330000  # z = x / 2**k lands in [asfloat(_OFF), 2 asfloat(_OFF)) = [0.6992, 1.3984)
_BITS = 4
_N = 1 << _BITS


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _from_bits(i: int) -> float:
    return struct.unpack("<f", struct.pack("<I", i))[0]


def _split(v: float) -> tuple[float, float]:
    hi = _f32(v)
    return hi, _f32(v - hi)


def _tables() -> tuple[list[float], list[float], list[float], list[float], list[float]]:
    """invc, ln(c) and log2(c) (hi, lo) per row; the row holding 1.0 gets invc = 1 exactly, so
    x near 1 has r = x - 1 exact and no cancellation with k ln 2 + ln c."""
    invc, ln_hi, ln_lo, l2_hi, l2_lo = [], [], [], [], []
    for i in range(_N):
        lo = _from_bits(_OFF + (i << (23 - _BITS)))
        hi = _from_bits(_OFF + ((i + 1) << (23 - _BITS)))
        inv = 1.0 if lo <= 1.0 < hi else _f32(2.0 / (lo + hi))
        invc.append(inv)
        for value, his, los in ((-math.log(inv), ln_hi, ln_lo), (-math.log2(inv), l2_hi, l2_lo)):
            h, low = _split(value)
            his.append(h)
            los.append(low)
    return invc, ln_hi, ln_lo, l2_hi, l2_lo


_INVC, _LN_HI, _LN_LO, _L2_HI, _L2_LO = _tables()
_LN2_A = 0.693145751953125  # 16 bits: k * _LN2_A is exact for every f32 exponent k
_LN2_B = _f32(math.log(2.0) - _LN2_A)
_INV_LN2 = _split(1.0 / math.log(2.0))
# (log1p(r) - r + r**2/2) / r**3 on |r| <= 1/32, fitted (Lawson), max relative error 2**-39
_LOG1P_TAIL = (
    0.16227604448795319,
    -0.16678525507450104,
    0.19997067749500275,
    -0.2499999850988388,
    0.3333333432674408,
)
# 2**f on |f| <= 1/2 with the constant term exactly 1, fitted: max relative error 2**-32.5
_EXP2 = (
    1.4323517461889423e-05,
    0.00015452111256308854,
    0.0013337964192032814,
    0.009618086740374565,
    0.055504050105810165,
    0.24022650718688965,
    0.6931471824645996,
    1.0,
)


def _load(ctx: IrContext, name: str, values: list[float], index: ir.Value) -> ir.Value:
    table = ctx.constant_table(f"hlort_logf32_{name}", F32, values)
    ptr = ctx.b.gep(
        table, [ir.Constant(I64, 0), index], inbounds=True, source_etype=table.value_type
    )
    return ctx.b.load(ptr, typ=F32)


def _log_parts(ctx: IrContext, a: ir.Value, base2: bool) -> dd.DD:
    """ln(a) (or log2(a)) as a two-float for a finite a > 0 (subnormals too); other inputs
    give finite garbage that the callers replace."""
    b = ctx.b
    c32 = lambda v: ir.Constant(I32, v)  # noqa: E731
    sub = b.fcmp_ordered("<", a, ctx.f(F32, 2.0**-126))
    a = b.select(sub, b.fmul(a, ctx.f(F32, 2.0**23)), a)
    bits = b.bitcast(a, I32)
    tmp = b.sub(bits, c32(_OFF))
    row = b.zext(b.and_(b.lshr(tmp, c32(23 - _BITS)), c32(_N - 1)), I64)
    k = b.sub(b.ashr(tmp, c32(23)), b.select(sub, c32(23), c32(0)))
    z = b.bitcast(b.sub(bits, b.and_(tmp, c32(-(1 << 23)))), F32)
    kf = b.sitofp(k, F32)
    p_hi, p_lo = dd.two_prod(ctx, z, _load(ctx, "invc", _INVC, row))
    r = b.fsub(p_hi, ctx.f(F32, 1.0))  # exact (Sterbenz): r + p_lo = z * invc - 1 exactly
    s_hi, s_lo = dd.two_prod(ctx, r, r)
    big, small = dd.fast_two_sum(ctx, r, b.fmul(s_hi, ctx.f(F32, -0.5)))
    tail = b.fmul(b.fmul(s_hi, r), ctx.horner(r, _LOG1P_TAIL))
    low = b.fmul(p_lo, b.fsub(ctx.f(F32, 1.0), r))  # d/dr log1p(r) = 1/(1+r) ~ 1 - r
    low = b.fadd(b.fadd(small, low), ctx.fma(s_lo, ctx.f(F32, -0.5), tail))
    if base2:
        m_hi, m_lo = dd.two_prod(ctx, big, ctx.f(F32, _INV_LN2[0]))
        m_lo = b.fadd(
            m_lo, ctx.fma(big, ctx.f(F32, _INV_LN2[1]), b.fmul(low, ctx.f(F32, _INV_LN2[0])))
        )
        c_hi, c_lo = _load(ctx, "l2hi", _L2_HI, row), _load(ctx, "l2lo", _L2_LO, row)
        s1, e1 = dd.two_sum(ctx, kf, c_hi)
        rest = b.fadd(c_lo, m_lo)
    else:
        m_hi = big
        c_hi, c_lo = _load(ctx, "lnhi", _LN_HI, row), _load(ctx, "lnlo", _LN_LO, row)
        s1, e1 = dd.two_sum(ctx, b.fmul(kf, ctx.f(F32, _LN2_A)), c_hi)
        rest = b.fadd(c_lo, ctx.fma(kf, ctx.f(F32, _LN2_B), low))
    s2, e2 = dd.two_sum(ctx, s1, m_hi)
    return dd.fast_two_sum(ctx, s2, b.fadd(b.fadd(e1, e2), rest))


def log1p_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """log(u) + (x - (u - 1)) / u for u = fl(1 + x), the second term from an exact two-sum."""
    b = ctx.b
    u, u_lo = dd.two_sum(ctx, x, ctx.f(F32, 1.0))
    hi, lo = _log_parts(ctx, u, base2=False)
    r = b.fadd(hi, b.fadd(lo, b.fdiv(u_lo, u)))
    r = b.select(b.fcmp_ordered("==", u, ctx.f(F32, 1.0)), x, r)  # |x| < 2**-25 (and -0)
    r = b.select(b.fcmp_ordered("==", x, ctx.f(F32, INF)), x, r)
    r = b.select(b.fcmp_ordered("==", x, ctx.f(F32, -1.0)), ctx.f(F32, -INF), r)
    r = b.select(b.fcmp_ordered("<", x, ctx.f(F32, -1.0)), ctx.f(F32, NAN), r)
    return b.select(ctx.is_nan(x), x, r)


def exp2_two_float(ctx: IrContext, t_hi: ir.Value, t_lo: ir.Value) -> ir.Value:
    """2**(t_hi + t_lo), rounded about once: 2**n 2**f with f = t - n a two-float and the
    fitted 2**f (|f| <= 1/2); beyond +-200 it overflows or underflows (scale's range)."""
    b = ctx.b
    finite = b.fcmp_ordered("<", ctx.fabs(t_hi), ctx.f(F32, 200.0))
    t_lo = b.select(finite, t_lo, ctx.f(F32, 0.0))
    t_hi = clamp(ctx, t_hi, -200.0, 200.0)
    n = ctx.intrinsic("roundeven", t_hi)
    f_hi, f_lo = dd.fast_two_sum(ctx, b.fsub(t_hi, n), t_lo)
    p = ctx.horner(f_hi, _EXP2)
    p = ctx.fma(p, b.fmul(f_lo, ctx.f(F32, math.log(2.0))), p)
    return scale(ctx, p, n)


def power_f32(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """C99 powf: 2**(y log2|x|) with the product in two floats, the sign and the special
    cases of Annex F; results that overflow or underflow (subnormals too) round once."""
    b = ctx.b
    zero, one = ctx.f(F32, 0.0), ctx.f(F32, 1.0)
    ax = ctx.fabs(x)
    l_hi, l_lo = _log_parts(ctx, ax, base2=True)
    l_hi = b.select(b.fcmp_ordered("==", ax, zero), ctx.f(F32, -INF), l_hi)
    l_hi = b.select(b.fcmp_ordered("==", ax, ctx.f(F32, INF)), ctx.f(F32, INF), l_hi)
    t_hi = b.fmul(y, l_hi)
    t_lo = b.fadd(ctx.fma(y, l_hi, b.fneg(t_hi)), b.fmul(y, l_lo))
    r = exp2_two_float(ctx, t_hi, t_lo)
    is_int = b.fcmp_ordered("==", ctx.intrinsic("floor", y), y)
    half = b.fmul(y, ctx.f(F32, 0.5))
    is_odd = b.and_(is_int, b.fcmp_ordered("!=", ctx.intrinsic("floor", half), half))
    x_neg = b.icmp_signed("<", b.bitcast(x, I32), ir.Constant(I32, 0))
    r = b.select(b.and_(x_neg, is_odd), b.fneg(r), r)
    finite_neg = b.and_(b.fcmp_ordered("<", x, zero), b.fcmp_ordered("!=", x, ctx.f(F32, -INF)))
    y_finite = b.fcmp_ordered("<", ctx.fabs(y), ctx.f(F32, INF))
    r = b.select(b.and_(b.and_(finite_neg, y_finite), b.not_(is_int)), ctx.f(F32, NAN), r)
    r = b.select(b.and_(b.fcmp_ordered("==", x, ctx.f(F32, -1.0)), b.not_(y_finite)), one, r)
    r = b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), ctx.f(F32, NAN), r)
    return b.select(b.or_(b.fcmp_ordered("==", y, zero), b.fcmp_ordered("==", x, one)), one, r)


__all__ = ["log1p_f32", "power_f32"]
