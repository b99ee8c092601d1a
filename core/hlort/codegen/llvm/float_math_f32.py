"""All-f32 forms of the f32 functions the CPU evaluates in f64: erf, sin, cos, tan, atan2,
expm1, cbrt, rsqrt (log1p and pow: float_log_f32.py).

``MathPolicy(f32_via_f64=False)`` selects them (GPU targets, where f64 runs at 1/32-1/64 of the
f32 rate on consumer parts), so a kernel of f32 ops has no f64 instruction. Like float_math.py
they are branch-free, handle NaN, +-inf, +-0 and subnormals as C99 does, and carry the few
extra bits they need as two-floats (double_double.py's error-free steps on f32). Measured bounds
(plugins/cpu/tests/test_transcendental_ulp_f32.py, sampled bit patterns of the whole range
against the interpreter's f64-rounded results): see float_math.py's table. Polynomials are
Taylor series where those converge fast, else fitted (Lawson's near-minimax weighted least
squares, coefficients rounded to f32 one at a time and the rest refitted) as noted.
"""

from __future__ import annotations

import math
import struct

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm.float_log_f32 import exp2_two_float
from hlort.codegen.llvm.float_parts import INF, NAN, clamp, keep_nan, pow2
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, I32
from hlort.codegen.llvm.pi_reduction_f32 import reduce_quarter_turns_f32


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _split(v: float) -> tuple[float, float]:
    hi = _f32(v)
    return hi, _f32(v - hi)


# -- sin, cos, tan --------------------------------------------------------------------------------
_SIN_TAYLOR = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(6, 0, -1))
_COS_TAYLOR = tuple((-1) ** k / math.factorial(2 * k) for k in range(6, 1, -1))


def _sin_cos(ctx: IrContext, a: dd.DD) -> tuple[dd.DD, dd.DD]:
    """sin and cos (two-floats) of a two-float |a| <= pi/4 (Taylor to a**13 and a**12:
    truncation < 2**-33); the leading terms of cos in two floats, so 1 - a**2/2 rounds once."""
    b = ctx.b
    a_hi, a_lo = a
    a2 = b.fmul(a_hi, a_hi)
    lo = b.fmul(a_lo, ctx.fma(a2, ctx.f(F32, -0.5), ctx.f(F32, 1.0)))  # a_lo * cos(a)
    s = dd.fast_two_sum(ctx, a_hi, ctx.fma(b.fmul(a_hi, a2), ctx.horner(a2, _SIN_TAYLOR), lo))
    p, pe = dd.two_prod(ctx, a_hi, a_hi)
    h = b.fmul(p, ctx.f(F32, 0.5))
    he = ctx.fma(pe, ctx.f(F32, 0.5), b.fmul(a_hi, a_lo))
    w = b.fsub(ctx.f(F32, 1.0), h)
    we = b.fsub(b.fsub(ctx.f(F32, 1.0), w), h)  # exact: 1 - w and h are both in [0, 0.31]
    tail = b.fmul(b.fmul(a2, a2), ctx.horner(a2, _COS_TAYLOR))
    c = dd.fast_two_sum(ctx, w, b.fadd(we, b.fsub(tail, he)))
    return s, c


def _divide(ctx: IrContext, n: dd.DD, d: dd.DD) -> ir.Value:
    """(n.hi + n.lo) / (d.hi + d.lo) to about 1/2 ulp: one division (a reciprocal), then a
    correction by the exact residual n - q d (Markstein)."""
    b = ctx.b
    inverse = b.fdiv(ctx.f(F32, 1.0), d[0])
    q = b.fmul(n[0], inverse)
    r = b.fsub(b.fadd(ctx.fma(b.fneg(q), d[0], n[0]), n[1]), b.fmul(q, d[1]))
    return ctx.fma(r, inverse, q)


def _trig(ctx: IrContext, x: ir.Value, which: str) -> ir.Value:
    b = ctx.b
    q, a = reduce_quarter_turns_f32(ctx, x)
    small = b.fcmp_ordered("<", ctx.fabs(x), ctx.f(F32, math.pi / 4))
    q = b.select(small, ir.Constant(I32, 0), q)
    a = (b.select(small, x, a[0]), b.select(small, ctx.f(F32, 0.0), a[1]))
    s2, c2 = _sin_cos(ctx, a)
    s, c = s2[0], c2[0]
    odd = b.trunc(q, ir.IntType(1))
    upper = b.icmp_unsigned(">=", q, ir.Constant(I32, 2))
    if which == "sin":
        r = b.select(odd, c, s)
        r = b.select(upper, b.fneg(r), r)
    elif which == "cos":
        r = b.select(odd, s, c)
        flip = b.or_(
            b.icmp_unsigned("==", q, ir.Constant(I32, 1)),
            b.icmp_unsigned("==", q, ir.Constant(I32, 2)),
        )
        r = b.select(flip, b.fneg(r), r)
    else:
        r = b.select(odd, b.fneg(_divide(ctx, c2, s2)), _divide(ctx, s2, c2))
    if which != "cos":
        r = b.select(b.fcmp_ordered("==", x, ctx.f(F32, 0.0)), x, r)  # keeps -0
    r = b.select(b.fcmp_ordered("==", ctx.fabs(x), ctx.f(F32, INF)), ctx.f(F32, NAN), r)
    return keep_nan(ctx, x, r)


def sin_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    return _trig(ctx, x, "sin")


def cos_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    return _trig(ctx, x, "cos")


def tan_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    return _trig(ctx, x, "tan")


# -- erf ------------------------------------------------------------------------------------------
_TWO_OVER_SQRT_PI = _split(2.0 / math.sqrt(math.pi))
# erf(x) / x - 2/sqrt(pi) as z * P(z), z = x**2 <= 1, fitted with the constant term fixed at the
# exact 2/sqrt(pi) (carried in two floats): max relative error 2**-29
_ERF_SMALL = (
    7.842548802727833e-05,
    -0.0008009398588910699,
    0.005188598297536373,
    -0.026854202151298523,
    0.11283603310585022,
    -0.3761262893676758,
)
# erfc(x) exp(x**2) on [1, 4] as a polynomial in x - 2.5, fitted: the error it adds to
# erf = 1 - erfc is below 2**-31 relative
_LOG2_E = _split(1.0 / math.log(2.0))
_ERFC_CENTER = 2.5
_ERFC_SCALED = (
    -2.834692713804543e-05,
    -5.968381083221175e-05,
    -0.00013984207180328667,
    0.00022147614799905568,
    -0.0006475542322732508,
    0.0025234525091946125,
    -0.00799920130521059,
    0.02492939867079258,
    -0.07434950023889542,
    0.21080632507801056,
)


def erf_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """x (2/sqrt(pi) + z P(z)) below 1; 1 - exp(-x**2) R(x) on [1, 4] with x**2 log2(e) in two
    floats for float_log_f32's exp2; +-1 beyond (erf(3.92) already rounds to 1)."""
    b = ctx.b
    ax = ctx.fabs(x)
    z = b.fmul(x, x)
    p = ctx.fma(z, ctx.horner(z, _ERF_SMALL), ctx.f(F32, _TWO_OVER_SQRT_PI[1]))
    small = ctx.fma(x, ctx.f(F32, _TWO_OVER_SQRT_PI[0]), b.fmul(x, p))
    mid = clamp(ctx, ax, 1.0, 4.0)
    sq, sq_lo = dd.two_prod(ctx, mid, mid)
    t_hi, t_lo = dd.two_prod(ctx, sq, ctx.f(F32, -_LOG2_E[0]))
    t_lo = b.fadd(
        t_lo, ctx.fma(sq, ctx.f(F32, -_LOG2_E[1]), b.fmul(sq_lo, ctx.f(F32, -_LOG2_E[0])))
    )
    e = exp2_two_float(ctx, t_hi, t_lo)
    erfc = b.fmul(e, ctx.horner(b.fsub(mid, ctx.f(F32, _ERFC_CENTER)), _ERFC_SCALED))
    one = ctx.f(F32, 1.0)
    large = b.select(b.fcmp_ordered(">=", ax, ctx.f(F32, 4.0)), one, b.fsub(one, erfc))
    r = b.select(b.fcmp_ordered("<", ax, one), small, ctx.copysign(large, x))
    r = b.select(b.fcmp_ordered("==", x, ctx.f(F32, 0.0)), x, r)  # keeps -0
    return keep_nan(ctx, x, r)


# -- atan2 ----------------------------------------------------------------------------------------
# (atan(t) - t) / t**3 as P(t**2) on [0, 1], fitted: max relative error of atan 2**-28.5
_ATAN = (
    -0.0017904058331623673,
    0.010899696499109268,
    -0.031148936599493027,
    0.05792722851037979,
    -0.08401581645011902,
    0.10951506346464157,
    -0.14264102280139923,
    0.1999853402376175,
    -0.33333298563957214,
)
_PI = _split(math.pi)
_PI_2 = _split(math.pi / 2)


def atan2_f32(ctx: IrContext, y: ir.Value, x: ir.Value) -> ir.Value:
    """K + s atan(t) with t = min/max of |x|, |y| in [0, 1], K in {0, pi/2, pi} (two floats)
    and s = +-1 by octant, so the result rounds about once."""
    b = ctx.b
    zero = ctx.f(F32, 0.0)
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    swap = b.fcmp_ordered(">", ay, ax)
    num = b.select(swap, ax, ay)
    den = b.select(swap, ay, ax)
    t = b.fdiv(num, den)
    both_inf = b.and_(
        b.fcmp_ordered("==", ax, ctx.f(F32, INF)), b.fcmp_ordered("==", ay, ctx.f(F32, INF))
    )
    t = b.select(b.fcmp_ordered("==", den, zero), zero, t)
    t = b.select(both_inf, ctx.f(F32, 1.0), t)
    t2 = b.fmul(t, t)
    a = ctx.fma(b.fmul(t, t2), ctx.horner(t2, _ATAN), t)
    negative_x = b.icmp_signed("<", b.bitcast(x, I32), ir.Constant(I32, 0))
    k_hi = b.select(swap, ctx.f(F32, _PI_2[0]), b.select(negative_x, ctx.f(F32, _PI[0]), zero))
    k_lo = b.select(swap, ctx.f(F32, _PI_2[1]), b.select(negative_x, ctx.f(F32, _PI[1]), zero))
    a = b.select(b.xor(swap, negative_x), b.fneg(a), a)
    r = b.fadd(k_hi, b.fadd(a, k_lo))
    r = ctx.copysign(r, y)
    return b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), ctx.f(F32, NAN), r)


# -- expm1 ----------------------------------------------------------------------------------------
_LN2_A, _LN2_B = 0.693359375, -2.12194440e-4  # Cephes: n * _LN2_A is exact for |n| < 2**15
# (expm1(r) - r) / r**2 on |r| <= 0.37 with the constant term 1/2, fitted: 2**-34 relative
_EXPM1 = (
    2.5061859560082667e-05,
    0.0001996379141928628,
    0.0013888507382944226,
    0.008333183825016022,
    0.0416666679084301,
    0.1666666716337204,
    0.5,
)


def expm1_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """2**n (1 + p) - 1 = 2 (h p + (h - 1/2)) with h = 2**(n-1) (h - 1/2 exact for the n that
    matter, no overflow before the last doubling) and p = expm1(r), r = x - n ln 2 a two-float."""
    b = ctx.b
    xc = clamp(ctx, x, -30.0, 89.0)
    n = ctx.intrinsic("roundeven", b.fmul(xc, ctx.f(F32, 1.0 / math.log(2.0))))
    r1 = ctx.fma(n, ctx.f(F32, -_LN2_A), xc)  # exact
    r, r_lo = dd.two_sum(ctx, r1, b.fmul(n, ctx.f(F32, -_LN2_B)))
    tail = ctx.fma(b.fmul(r, r), ctx.horner(r, _EXPM1), b.fmul(r_lo, b.fadd(r, ctx.f(F32, 1.0))))
    p = b.fadd(r, tail)
    h = pow2(ctx, b.sub(b.fptosi(n, I32), ir.Constant(I32, 1)), F32)
    y = b.fmul(ctx.f(F32, 2.0), ctx.fma(h, p, b.fsub(h, ctx.f(F32, 0.5))))
    y = b.select(b.fcmp_ordered("==", n, ctx.f(F32, 0.0)), p, y)  # p / 2 would lose subnormal bits
    y = b.select(b.fcmp_ordered("==", x, ctx.f(F32, 0.0)), x, y)  # keeps -0
    return keep_nan(ctx, x, y)


# -- cbrt and rsqrt -------------------------------------------------------------------------------
# cbrt(m) on [1, 2], fitted: 2**-16.7 relative (a start for one Newton step and one exact one)
_CBRT_START = (
    -0.010603688657283783,
    0.08609011024236679,
    -0.3006088435649872,
    0.718151330947876,
    0.506980299949646,
)
_CBRT_2 = (1.0, _f32(2.0 ** (1 / 3)), _f32(4.0 ** (1 / 3)))


def cbrt_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """|x| = v 2**(3q) with v in [1, 8): a fitted start, a Newton step, then one whose residual
    y**3 - v is exact (two-float products), so the result is nearly correctly rounded."""
    b = ctx.b
    c32 = lambda v: ir.Constant(I32, v)  # noqa: E731
    a = ctx.fabs(x)
    sub = b.fcmp_ordered("<", a, ctx.f(F32, 2.0**-126))
    a_n = b.select(sub, b.fmul(a, ctx.f(F32, 2.0**24)), a)
    bits = b.bitcast(a_n, I32)
    e = b.add(b.lshr(bits, c32(23)), c32(150 - 127))  # biased so e >= 0 (e + 150 - 127 >= 0)
    third = b.udiv(e, c32(3))
    rem = b.sub(e, b.mul(third, c32(3)))
    q = b.sub(third, c32(50))  # (e_true + 150) = 3 (q + 50) + rem
    q = b.sub(q, b.select(sub, c32(8), c32(0)))
    m = b.bitcast(b.or_(b.and_(bits, c32(0x7FFFFF)), c32(0x3F800000)), F32)
    v = b.fmul(m, pow2(ctx, rem, F32))
    c = b.select(
        b.icmp_unsigned("==", rem, c32(0)),
        ctx.f(F32, _CBRT_2[0]),
        b.select(
            b.icmp_unsigned("==", rem, c32(1)), ctx.f(F32, _CBRT_2[1]), ctx.f(F32, _CBRT_2[2])
        ),
    )
    y = b.fmul(ctx.horner(m, _CBRT_START), c)
    third_f = ctx.f(F32, 1.0 / 3.0)
    y2 = b.fmul(y, y)
    y = b.fsub(y, b.fmul(b.fdiv(b.fsub(b.fmul(y2, y), v), y2), third_f))
    sq, sq_lo = dd.two_prod(ctx, y, y)
    cube, cube_lo = dd.two_prod(ctx, sq, y)
    residual = b.fadd(b.fsub(cube, v), ctx.fma(sq_lo, y, cube_lo))
    y = b.fsub(y, b.fmul(b.fdiv(residual, sq), third_f))
    r = ctx.copysign(b.fmul(y, pow2(ctx, q, F32)), x)
    special = b.or_(b.fcmp_ordered("==", a, ctx.f(F32, 0.0)), ctx.is_nan(a))
    special = b.or_(special, b.fcmp_ordered("==", a, ctx.f(F32, INF)))
    return b.select(special, x, r)


def rsqrt_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """1/sqrt(x) and one Newton step whose residual 1 - x y**2 is formed exactly (y**2 in two
    floats; x scaled by 2**+-64 at either end of the range so y**2 stays normal)."""
    b = ctx.b
    tiny = b.fcmp_ordered("<", x, ctx.f(F32, 2.0**-100))
    huge = b.fcmp_ordered(">", x, ctx.f(F32, 2.0**100))
    xs = b.select(tiny, b.fmul(x, ctx.f(F32, 2.0**64)), x)
    xs = b.select(huge, b.fmul(x, ctx.f(F32, 2.0**-64)), xs)
    y = b.fdiv(ctx.f(F32, 1.0), ctx.intrinsic("sqrt", xs))
    sq, sq_lo = dd.two_prod(ctx, y, y)
    residual = b.fsub(ctx.fma(b.fneg(xs), sq, ctx.f(F32, 1.0)), b.fmul(xs, sq_lo))
    y = ctx.fma(b.fmul(y, ctx.f(F32, 0.5)), residual, y)
    y = b.select(tiny, b.fmul(y, ctx.f(F32, 2.0**32)), y)
    y = b.select(huge, b.fmul(y, ctx.f(F32, 2.0**-32)), y)
    y = b.select(b.fcmp_ordered("==", x, ctx.f(F32, 0.0)), ctx.copysign(ctx.f(F32, INF), x), y)
    y = b.select(b.fcmp_ordered("==", x, ctx.f(F32, INF)), ctx.f(F32, 0.0), y)
    y = b.select(b.fcmp_ordered("<", x, ctx.f(F32, 0.0)), ctx.f(F32, NAN), y)
    return keep_nan(ctx, x, y)


__all__ = [
    "atan2_f32",
    "cbrt_f32",
    "cos_f32",
    "erf_f32",
    "expm1_f32",
    "rsqrt_f32",
    "sin_f32",
    "tan_f32",
]
