"""complex64 math in f32 only, for targets where f64 is slow (``MathPolicy(f32_via_f64=False)``:
the GPU targets; an H200 runs f64 at a fraction of its f32 rate, consumer AMD parts barely have
it). complex_math.py computes c64 in f64 and rounds; these forms keep the parts in f32 and carry
the few extra bits they need as two-floats (double_double.py's error-free steps work on f32), so
a c64 kernel has no f64 instruction. The Annex G values for infinite and NaN parts are
complex_math.py's own (its ``*_specials`` functions take constants from the operand type), so
they are the interpreter's exactly; only the finite formulas differ:

* abs: |z| = h 2^k with x, y scaled by 2^-k (k even) into [1, 4), h = sqrt(x^2 + y^2) from a
  two-float sum of squares (fused multiply-adds) and one Newton correction: nearly correctly
  rounded, no intermediate over- or underflow; the 2^k applied in two exact steps.
* log: re = (log(s_hi) + s_lo / s_hi) / 2 + k ln 2 with s the same two-float and log(s_hi)
  float_log_f32's two-float log (|z| ~ 1 keeps its relative accuracy); im = atan2_f32.
* sqrt: Algorithm 312 (glibc's) on the scaled parts, |z| from the two-float s.
* exp: e^x = p 2^n (x log2 e a two-float, 2^f fitted), each part v p rounded once and scaled by
  2^n in two exact steps, so e^x may overflow while e^x cos y does not (x up to 200).
* sinh, cosh (sin, cos): x + x^3 P(x^2) below 1, (e -+ 1/e) / 2 below 10, e^|x| / 2 = p 2^(n-1)
  beyond (cosh x cos y stays finite past f32's e^88.7); sin z = -i sinh(iz), cos z = cosh(iz).
* tanh (tan): (S C + i sin y cos y) / (S^2 + cos^2 y) below |x| = 10, else +-1 + i 4 sin y cos y
  e^-2|x|; tan z = -i tanh(iz).
* divide: XLA's (the interpreter's complex_divide) Smith algorithm, with the denominator scaled
  by a power of two into [1, 2) and a numerator whose larger part is >= 2^125 by 1/8 (< 2^-60:
  by 2^64), so no intermediate overflows or underflows where the f64 form's would not; the
  quotient is scaled back in two steps; the same fixes for zero and infinite operands. Parts
  below 2^-122 of a numerator whose other part is >= 2^125 are lost (they change the quotient
  by < 2^-247 of its size).

complex_math_ops.py takes the other ops (sign, expm1, log1p, rsqrt, logistic, cbrt, atan2, pow)
from these through its f32 kit. Measured bounds: tests/gpu/test_complex_math_f32_simulated.py.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm import complex_math as cm
from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm import float_math_f32 as m32
from hlort.codegen.llvm.complex_math import INF, Pair, is_finite, is_inf, is_zero
from hlort.codegen.llvm.float_log_f32 import _EXP2, _INV_LN2, _LN2_A, _LN2_B, _log_parts
from hlort.codegen.llvm.float_parts import pow2
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, I32

_LOG2_E = _INV_LN2  # log2(e) as f32 hi + lo
_LN2 = (_LN2_A, _LN2_B)  # hi has 16 bits: k * hi is exact for |k| < 2^8
_EXP_MIN, _EXP_MAX = -110.0, 200.0  # e^-110 * 4 underflows; e^200 * 2^-149 overflows
_SINH_SPLIT = 10.0  # above, e^-2|x| < 2^-28: sinh, cosh = e^|x| / 2, tanh's real part +-1
_SINH_TAYLOR = tuple(1.0 / math.factorial(2 * k + 1) for k in range(6, 0, -1))  # 1/13! .. 1/3!
_EPS = 2.0**-23


def k32(v: float) -> ir.Constant:
    return ir.Constant(F32, float(v))


def i32(v: int) -> ir.Constant:
    return ir.Constant(I32, v)


# -- scaling --------------------------------------------------------------------------------------
def scaled_parts(ctx: IrContext, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(x 2^-k, y 2^-k, k) for finite x, y with k an even i32 in [-150, 126] that puts
    max(|x|, |y|) 2^-k in [1, 4) (subnormal parts are scaled up by 2^24 first)."""
    b = ctx.b
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    larger = b.select(b.fcmp_ordered(">", ax, ay), ax, ay)
    tiny = b.fcmp_ordered("<", larger, k32(2.0**-126))
    pre = b.select(tiny, k32(2.0**24), k32(1.0))
    bits = b.bitcast(b.fmul(larger, pre), I32)
    e = b.sub(b.and_(b.lshr(bits, i32(23)), i32(0xFF)), i32(127))
    e = b.select(b.icmp_signed("<", e, i32(-126)), i32(-126), e)
    e = b.and_(b.select(b.icmp_signed(">", e, i32(126)), i32(126), e), i32(-2))
    f = pow2(ctx, b.neg(e), F32)
    k = b.sub(e, b.select(tiny, i32(24), i32(0)))
    return b.fmul(b.fmul(x, pre), f), b.fmul(b.fmul(y, pre), f), k


def sqrt_dd(ctx: IrContext, s: dd.DD) -> ir.Value:
    """sqrt(s.hi + s.lo) with one Newton correction (s > 0): within ~0.5 ulp."""
    b = ctx.b
    h = ctx.intrinsic("sqrt", s[0])
    residual = b.fadd(ctx.fma(b.fneg(h), h, s[0]), s[1])
    return b.fadd(h, b.fdiv(residual, b.fmul(k32(2.0), h)))


def _half_pow2(ctx: IrContext, k: ir.Value) -> ir.Value:
    return pow2(ctx, ctx.b.ashr(k, i32(1)), F32)


def cabs(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """|x + iy|: an infinite part gives +inf, else a NaN part NaN; nearly correctly rounded."""
    b = ctx.b
    safe = b.and_(is_finite(ctx, x), is_finite(ctx, y))
    xs, ys, k = scaled_parts(ctx, b.select(safe, x, k32(1.0)), b.select(safe, y, k32(0.0)))
    h = sqrt_dd(ctx, cm.sum_of_squares(ctx, xs, ys))
    h = b.select(b.and_(is_zero(ctx, xs), is_zero(ctx, ys)), k32(0.0), h)
    half = _half_pow2(ctx, k)
    h = b.fmul(b.fmul(h, half), half)
    h = b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), k32(math.nan), h)
    return b.select(b.or_(is_inf(ctx, x), is_inf(ctx, y)), k32(INF), h)


def log_abs(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """log|x + iy| for finite parts, not both zero. |z| = 1 has no solution with two nonzero
    f32 parts, so where log|z| rounds to 0 with both nonzero it is the smallest subnormal of
    the sign of |z|^2 - 1 (as the interpreter's f64 log|z| is tiny, not 0: an infinite b in
    a^b = exp(b log a) then gives its infinity, not NaN)."""
    b = ctx.b
    xs, ys, k = scaled_parts(ctx, x, y)
    # larger part in [1/4, 1): unscaled, so |z| ~ 1 gives s ~ 1 (no cancellation with k ln 2)
    near = b.icmp_signed("==", k, i32(-2))
    xs, ys, k = b.select(near, x, xs), b.select(near, y, ys), b.select(near, i32(0), k)
    s_hi, s_lo = cm.sum_of_squares(ctx, xs, ys)
    l_hi, l_lo = _log_parts(ctx, s_hi, base2=False)
    l_lo = b.fadd(l_lo, b.fdiv(s_lo, s_hi))
    kf = b.sitofp(k, F32)
    hi, err = dd.two_sum(ctx, b.fmul(k32(0.5), l_hi), b.fmul(kf, k32(_LN2[0])))
    r = b.fadd(hi, b.fadd(err, ctx.fma(k32(0.5), l_lo, b.fmul(kf, k32(_LN2[1])))))
    lost = b.and_(is_zero(ctx, r), b.not_(b.or_(is_zero(ctx, x), is_zero(ctx, y))))
    one = k32(1.0)
    below = b.or_(
        b.fcmp_ordered("<", s_hi, one),
        b.and_(b.fcmp_ordered("==", s_hi, one), b.fcmp_ordered("<", s_lo, k32(0.0))),
    )
    tiny = b.select(below, k32(-(2.0**-149)), k32(2.0**-149))
    return b.select(lost, tiny, r)


def csign(ctx: IrContext, z: Pair) -> Pair:
    """z / |z| (0 at 0) from the scaled parts, so neither |z| nor 1 / |z| over- or underflows;
    NaN where NumPy's division by |z| + 0i gives NaN (a non-finite part)."""
    b = ctx.b
    x, y = z
    safe = b.and_(is_finite(ctx, x), is_finite(ctx, y))
    xs, ys, _ = scaled_parts(ctx, b.select(safe, x, k32(1.0)), b.select(safe, y, k32(0.0)))
    h = sqrt_dd(ctx, cm.sum_of_squares(ctx, xs, ys))
    zero = k32(0.0)  # NumPy's (x + y 0) / |z|, (y - x 0) / |z|: the signs of its zero parts
    value = (b.fdiv(b.fadd(xs, b.fmul(ys, zero)), h), b.fdiv(b.fsub(ys, b.fmul(xs, zero)), h))
    nan2 = (k32(math.nan), k32(math.nan))
    value = cm.select_pair(ctx, safe, value, nan2)
    both_zero = b.and_(is_zero(ctx, x), is_zero(ctx, y))
    return cm.select_pair(ctx, both_zero, (zero, zero), value)


def cbrt_abs(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """cbrt|z| with |z| never rounded to a subnormal or overflowing first: parts whose larger
    is below 2^-60 or above 2^60 are scaled by 2^+-72 and the root by 2^-+24."""
    b = ctx.b
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    larger = b.select(b.fcmp_ordered(">", ax, ay), ax, ay)
    tiny = b.fcmp_ordered("<", larger, k32(2.0**-60))
    huge = b.fcmp_ordered(">", larger, k32(2.0**60))
    up = b.select(tiny, k32(2.0**72), b.select(huge, k32(2.0**-72), k32(1.0)))
    down = b.select(tiny, k32(2.0**-24), b.select(huge, k32(2.0**24), k32(1.0)))
    return b.fmul(m32.cbrt_f32(ctx, cabs(ctx, b.fmul(x, up), b.fmul(y, up))), down)


def common_scale(ctx: IrContext, values: list[ir.Value]) -> tuple[ir.Value, ir.Value]:
    """Two powers of two whose product brings the largest magnitude of ``values`` into [1, 2)
    where it is above 2^60 or below 2^-60 (else, or when one is infinite or NaN, or all are
    zero, both 1: scaling would lose the smallest parts' bits for nothing)."""
    b = ctx.b
    larger = ctx.fabs(values[0])
    for v in values[1:]:
        av = ctx.fabs(v)
        larger = b.select(b.fcmp_ordered(">", av, larger), av, larger)
    finite = is_finite(ctx, values[0])
    for v in values[1:]:
        finite = b.and_(finite, is_finite(ctx, v))
    needed = b.or_(
        b.fcmp_ordered(">", larger, k32(2.0**60)), b.fcmp_ordered("<", larger, k32(2.0**-60))
    )
    e = b.select(b.and_(finite, needed), pow2_exponent(ctx, larger), i32(0))
    half = b.sdiv(b.neg(e), i32(2))
    return pow2(ctx, half, F32), pow2(ctx, b.sub(b.neg(e), half), F32)


def sum_of_products(ctx: IrContext, a: ir.Value, b_: ir.Value, c: ir.Value, d: ir.Value):
    """a b + c d; where both products are below 2^-60, formed at 2^128 times their size (the
    smaller factor of each scaled) and scaled back in two steps, so a sum that underflows f32
    is a zero of its sign (or a subnormal), not the +0 of two underflowed products."""
    b = ctx.b
    plain = ctx.fma(a, b_, b.fmul(c, d))
    limit = k32(2.0**-60)
    small = b.and_(
        b.fcmp_ordered("<", ctx.fabs(b.fmul(a, b_)), limit),
        b.fcmp_ordered("<", ctx.fabs(b.fmul(c, d)), limit),
    )

    def up(u, v):  # (the smaller of u, v) * 2^128 times the larger
        au, av = ctx.fabs(u), ctx.fabs(v)
        u_small = b.fcmp_ordered("<", au, av)
        lo, hi = b.select(u_small, u, v), b.select(u_small, v, u)
        return b.fmul(b.fmul(lo, k32(2.0**64)), k32(2.0**64)), hi

    lo1, hi1 = up(a, b_)
    lo2, hi2 = up(c, d)
    scaled = ctx.fma(lo1, hi1, b.fmul(lo2, hi2))
    back = b.fmul(b.fmul(scaled, k32(2.0**-64)), k32(2.0**-64))
    return b.select(small, back, plain)


# -- e^x as p 2^n ---------------------------------------------------------------------------------
def exp_split(ctx: IrContext, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(p, n): e^x = p 2^n, p in [0.7, 1.42] within ~1 ulp, n an i32, for finite x (clamped to
    [-110, 200], which changes no product v e^x with 2^-149 <= |v| <= 4)."""
    b = ctx.b
    x = b.select(b.fcmp_ordered("<", x, k32(_EXP_MIN)), k32(_EXP_MIN), x)
    x = b.select(b.fcmp_ordered(">", x, k32(_EXP_MAX)), k32(_EXP_MAX), x)
    t_hi, t_lo = dd.two_prod(ctx, x, k32(_LOG2_E[0]))
    t_lo = ctx.fma(x, k32(_LOG2_E[1]), t_lo)
    n = ctx.intrinsic("roundeven", t_hi)
    f_hi, f_lo = dd.two_sum(ctx, b.fsub(t_hi, n), t_lo)
    p = ctx.horner(f_hi, _EXP2)
    p = ctx.fma(p, b.fmul(f_lo, k32(math.log(2.0))), p)
    return p, b.fptosi(n, I32)


def mul_pow2(ctx: IrContext, v: ir.Value, m: ir.Value, n: ir.Value) -> ir.Value:
    """v m 2^n rounded once (subnormal results aside) for finite v and m (m in [1/4, 4] when
    n != 0) and an i32 n: a tiny v is scaled up first, the power of two applied in two exact
    steps, n clamped to [-252, 254] (beyond, every such product under- or overflows)."""
    b = ctx.b
    tiny = b.fcmp_ordered("<", ctx.fabs(v), k32(2.0**-100))
    vs = b.select(tiny, b.fmul(v, k32(2.0**64)), v)
    n = b.sub(n, b.select(tiny, i32(64), i32(0)))
    n = b.select(b.icmp_signed(">", n, i32(254)), i32(254), n)
    n = b.select(b.icmp_signed("<", n, i32(-252)), i32(-252), n)
    y = b.fmul(vs, m)
    up = b.icmp_signed(">=", n, i32(0))
    last_down = b.select(b.icmp_signed(">", n, i32(-126)), n, i32(-126))
    last = b.select(up, b.sub(n, b.ashr(n, i32(1))), last_down)
    first = b.sub(n, last)
    return b.fmul(b.fmul(y, pow2(ctx, first, F32)), pow2(ctx, last, F32))


def times_exp(ctx: IrContext, v: ir.Value, e: tuple[ir.Value, ir.Value]) -> ir.Value:
    """v e^x rounded about once, for finite v, from exp_split's (p, n)."""
    return mul_pow2(ctx, v, e[0], e[1])


def sin_cos(ctx: IrContext, y: ir.Value) -> Pair:
    return m32.sin_f32(ctx, y), m32.cos_f32(ctx, y)


# -- exp, log, sqrt -------------------------------------------------------------------------------
def cexp(ctx: IrContext, z: Pair) -> Pair:
    x, y = z
    e = exp_split(ctx, cm.finite_or_zero(ctx, x))
    s, c = sin_cos(ctx, cm.finite_or_zero(ctx, y))
    return cm.exp_specials(ctx, z, (times_exp(ctx, c, e), times_exp(ctx, s, e)), s, c)


def arg(ctx: IrContext, y: ir.Value, x: ir.Value) -> ir.Value:
    """atan2(y, x), with the smallest subnormal of y's sign where it underflows to 0 for a
    nonzero finite y and finite x > 0 (as log_abs: the interpreter's f64 angle is not 0)."""
    b = ctx.b
    r = m32.atan2_f32(ctx, y, x)
    lost = b.and_(is_zero(ctx, r), b.not_(is_zero(ctx, y)))
    lost = b.and_(lost, b.and_(is_finite(ctx, y), is_finite(ctx, x)))
    lost = b.and_(lost, b.fcmp_ordered(">", x, k32(0.0)))
    return b.select(lost, ctx.copysign(k32(2.0**-149), y), r)


def clog(ctx: IrContext, z: Pair) -> Pair:
    return cm.log_with(ctx, z, log_abs, arg)


def csqrt(ctx: IrContext, z: Pair) -> Pair:
    b = ctx.b
    (xs0, ys0), _ = cm.sqrt_safe(ctx, z)
    xs, ys, k = scaled_parts(ctx, xs0, ys0)
    modulus = sqrt_dd(ctx, cm.sum_of_squares(ctx, xs, ys))
    root = ctx.intrinsic("sqrt", b.fmul(k32(0.5), b.fadd(modulus, ctx.fabs(xs))))
    t = b.fmul(root, _half_pow2(ctx, k))
    u = ctx.fabs(b.fmul(k32(0.5), b.fdiv(ys0, t)))
    return cm.sqrt_specials(ctx, z, cm.sqrt_parts(ctx, z, xs, t, u))


# -- hyperbolic and circular functions ------------------------------------------------------------
def sinh_cosh(ctx: IrContext, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(S, C, n) with sinh x = S 2^n and cosh x = C 2^n, for finite x; n = 0 below |x| = 10."""
    b = ctx.b
    a = ctx.fabs(x)
    p, n = exp_split(ctx, a)
    small = b.fcmp_ordered("<", a, k32(_SINH_SPLIT))
    e = b.fmul(p, pow2(ctx, b.select(small, n, i32(0)), F32))  # e^|x| below the split
    inv = b.fdiv(k32(1.0), e)
    cosh = b.fmul(k32(0.5), b.fadd(e, inv))
    sinh = b.fmul(k32(0.5), b.fsub(e, inv))
    a2 = b.fmul(a, a)
    series = ctx.fma(b.fmul(a, a2), ctx.horner(a2, _SINH_TAYLOR), a)
    sinh = b.select(b.fcmp_ordered("<", a, k32(1.0)), series, sinh)
    half_p = b.fmul(k32(0.5), p)
    c = b.select(small, cosh, half_p)
    s = ctx.copysign(b.select(small, sinh, half_p), x)
    return s, c, b.select(small, i32(0), n)


def _hyperbolic(ctx: IrContext, z: Pair, odd: bool) -> tuple[Pair, Pair]:
    x, y = cm.finite_or_zero(ctx, z[0]), cm.finite_or_zero(ctx, z[1])
    s_x, c_x, n = sinh_cosh(ctx, x)
    sin_y, cos_y = sin_cos(ctx, y)
    first, second = (s_x, c_x) if odd else (c_x, s_x)
    value = mul_pow2(ctx, cos_y, first, n), mul_pow2(ctx, sin_y, second, n)
    return value, (sin_y, cos_y)


def csinh(ctx: IrContext, z: Pair) -> Pair:
    value, (sin_y, cos_y) = _hyperbolic(ctx, z, odd=True)
    return cm.sinh_specials(ctx, z, value, sin_y, cos_y)


def ccosh(ctx: IrContext, z: Pair) -> Pair:
    value, (sin_y, cos_y) = _hyperbolic(ctx, z, odd=False)
    return cm.cosh_specials(ctx, z, value, sin_y, cos_y)


def ctanh(ctx: IrContext, z: Pair) -> Pair:
    b = ctx.b
    x, y = z
    xf, yf = cm.finite_or_zero(ctx, x), cm.finite_or_zero(ctx, y)
    a = ctx.fabs(xf)
    s_x, c_x, _ = sinh_cosh(ctx, cm.clamp_abs(ctx, xf, _SINH_SPLIT))
    sin_y, cos_y = sin_cos(ctx, yf)
    cos2 = b.fmul(cos_y, cos_y)
    keep_sinh = b.fcmp_ordered(">", ctx.fabs(s_x), b.fmul(ctx.fabs(cos_y), k32(_EPS)))
    den = b.select(keep_sinh, ctx.fma(s_x, s_x, cos2), cos2)
    near = (b.fdiv(b.fmul(s_x, c_x), den), b.fdiv(b.fmul(sin_y, cos_y), den))
    e = exp_split(ctx, b.fmul(k32(-2.0), a))
    four_sin_cos = b.fmul(b.fmul(k32(4.0), sin_y), cos_y)
    far = (ctx.copysign(k32(1.0), xf), times_exp(ctx, four_sin_cos, e))
    value = cm.select_pair(ctx, b.fcmp_ordered(">", a, k32(_SINH_SPLIT)), far, near)
    return cm.tanh_specials(ctx, z, value, sin_y, cos_y)


def csin(ctx: IrContext, z: Pair) -> Pair:
    return cm.csin(ctx, z, sinh=csinh)


def ccos(ctx: IrContext, z: Pair) -> Pair:
    return cm.ccos(ctx, z, cosh=ccosh)


def ctan(ctx: IrContext, z: Pair) -> Pair:
    return cm.ctan(ctx, z, tanh=ctanh)


# -- XLA's division -------------------------------------------------------------------------------
def pow2_exponent(ctx: IrContext, larger: ir.Value) -> ir.Value:
    """The i32 e with larger 2^-e in [1, 2) for a finite larger > 0 (0 otherwise)."""
    b = ctx.b
    ok = b.and_(b.fcmp_ordered(">", larger, k32(0.0)), b.fcmp_ordered("<", larger, k32(INF)))
    tiny = b.fcmp_ordered("<", larger, k32(2.0**-126))
    bits = b.bitcast(b.fmul(larger, b.select(tiny, k32(2.0**24), k32(1.0))), I32)
    e = b.sub(b.and_(b.lshr(bits, i32(23)), i32(0xFF)), b.select(tiny, i32(127 + 24), i32(127)))
    return b.select(ok, e, i32(0))


def scale_by(ctx: IrContext, v: ir.Value, e: ir.Value) -> ir.Value:
    """v 2^e for an i32 e in [-252, 254], in two steps."""
    b = ctx.b
    half = b.sdiv(e, i32(2))
    return b.fmul(b.fmul(v, pow2(ctx, half, F32)), pow2(ctx, b.sub(e, half), F32))


def larger_abs(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    return ctx.b.select(ctx.b.fcmp_ordered(">", ax, ay), ax, ay)


def common_max(ctx: IrContext, values: list[ir.Value]) -> ir.Value:
    """The largest magnitude of ``values`` (NaN parts are passed over)."""
    m = ctx.fabs(values[0])
    for v in values[1:]:
        m = larger_abs(ctx, m, v)
    return m


def _sum_no_overflow(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """x + y, or (x / 8 + y / 8) where the sum of finite x, y overflows f32 (not f64): the
    sign and zero-ness the interpreter's f64 sum has."""
    b = ctx.b
    s = b.fadd(x, y)
    over = b.and_(is_inf(ctx, s), b.and_(is_finite(ctx, x), is_finite(ctx, y)))
    eighth = k32(0.125)
    return b.select(over, b.fadd(b.fmul(x, eighth), b.fmul(y, eighth)), s)


def xla_divide(ctx: IrContext, a: Pair, d: Pair) -> Pair:
    """a / d by XLA's algorithm (the interpreter's ``complex_divide``) in f32: the denominator
    scaled into [1, 2), a tiny ratio of its parts carried scaled by 2^64, a tiny numerator
    scaled up by 2^64 and one that overflows the formula down by 1/8; plain products and sums
    as the interpreter's, so quotients it gets exact (a zero part) come out exact too."""
    b = ctx.b
    (ar0, ai0), (br0, bi0) = a, d
    ed = pow2_exponent(ctx, larger_abs(ctx, br0, bi0))
    br, bi = scale_by(ctx, br0, b.neg(ed)), scale_by(ctx, bi0, b.neg(ed))
    r_small = b.fcmp_ordered("<", ctx.fabs(br), ctx.fabs(bi))
    big, small0 = b.select(r_small, bi, br), b.select(r_small, br0, bi0)
    small = b.select(r_small, br, bi)
    tiny_r = b.and_(
        b.fcmp_ordered("<", ctx.fabs(small), k32(2.0**-100)), b.not_(is_zero(ctx, small0))
    )
    tiny_r = b.and_(tiny_r, b.and_(is_finite(ctx, small0), is_finite(ctx, big)))
    small_up = scale_by(ctx, small0, b.sub(i32(64), ed))  # from the unscaled part: exact
    ratio = b.fdiv(b.select(tiny_r, small_up, small), big)
    # a ratio below even that stays the smallest subnormal of its sign (the f64 form's is
    # nonzero: inf, not NaN, where it meets an infinite numerator part)
    lost = b.and_(tiny_r, is_zero(ctx, ratio))
    sign = b.fmul(ctx.copysign(k32(1.0), small0), ctx.copysign(k32(1.0), big))
    ratio = b.select(lost, ctx.copysign(k32(2.0**-149), sign), ratio)
    down = b.select(tiny_r, k32(2.0**-64), k32(1.0))

    def times_ratio(v):
        return b.fmul(ratio, b.fmul(v, down))

    den = b.fadd(big, times_ratio(small))
    larger_a = larger_abs(ctx, ar0, ai0)
    tiny_a = b.and_(
        b.fcmp_ordered("<", larger_a, k32(2.0**-60)), b.fcmp_ordered(">", larger_a, k32(0.0))
    )

    def smith(scale_a):
        ar, ai = b.fmul(ar0, scale_a), b.fmul(ai0, scale_a)
        cr = b.select(
            r_small, b.fadd(times_ratio(ar), ai), b.fadd(times_ratio(ai), ar)
        )  # r ar + ai, r ai + ar
        ci = b.select(r_small, b.fsub(times_ratio(ai), ar), b.fsub(ai, times_ratio(ar)))
        return b.fdiv(cr, den), b.fdiv(ci, den)

    plain = smith(b.select(tiny_a, k32(2.0**64), k32(1.0)))
    eighth = smith(k32(0.125))
    finite = b.and_(
        b.and_(is_finite(ctx, ar0), is_finite(ctx, ai0)),
        b.and_(is_finite(ctx, br0), is_finite(ctx, bi0)),
    )
    overflowed = b.and_(finite, b.or_(is_inf(ctx, plain[0]), is_inf(ctx, plain[1])))
    q = cm.select_pair(ctx, overflowed, eighth, plain)
    ea = b.select(overflowed, i32(3), b.select(tiny_a, i32(-64), i32(0)))
    shift = b.sub(ea, ed)
    q = scale_by(ctx, q[0], shift), scale_by(ctx, q[1], shift)
    return cm.divide_specials(ctx, a, d, q, add_parts=_sum_no_overflow)


__all__ = [
    "cabs",
    "cexp",
    "clog",
    "csqrt",
    "csinh",
    "ccosh",
    "ctanh",
    "csin",
    "ccos",
    "ctan",
    "xla_divide",
    "exp_split",
    "times_exp",
    "log_abs",
    "sin_cos",
    "csign",
    "cbrt_abs",
    "common_scale",
    "common_max",
    "sum_of_products",
    "pow2_exponent",
    "scale_by",
    "larger_abs",
]
