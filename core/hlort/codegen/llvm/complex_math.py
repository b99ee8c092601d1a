"""Complex elementary functions (C99 Annex G, glibc's choices) as straight-line f64 LLVM IR.

The Annex G special cases of each function (``exp_specials``, ``log_with``, ``sqrt_specials``,
``sinh_specials``, ``cosh_specials``, ``tanh_specials``) take their constants from the operand
type, so complex_math_f32.py's f32 finite formulas share them.

A complex value here is a pair ``(re, im)`` of f64 register values; complex_math_ops.py widens
c64 parts to f64 before calling these and rounds each result part once (the interpreter computes
c64 in c128 and rounds, so c64 results are nearly correctly rounded). Everything is built from
the vectorizable real functions of float_math / float_math_f64 (no libm call): every function is
branch-free, the finite-input formula runs on sanitized operands and the Annex G values for
infinite and NaN parts (as glibc, hence NumPy, gives them) are selected over it.

* exp: e^x (cos y, sin y) with e^x = (e_hi + e_lo) 2^n from float_math_f64's double-double exp,
  the part products scaled by 2^n in two exact steps, so e^x may overflow while e^x cos y does
  not (x up to ~1454), and underflow rounds once.
* log: re = log|z| = (log(s_hi) + s_lo / s_hi) / 2 + k ln 2, where s = x^2 + y^2 is a
  double-double of the parts scaled by 2^-k (k even, the larger part brought into [1, 4), so no
  square over- or underflows) and log(s_hi) float_math_f64's double-double log: |z| ~ 1 keeps
  its relative accuracy down to |x^2 + y^2 - 1| ~ 2^-100; im = atan2(y, x).
* sqrt: Algorithm 312 (glibc's) on the same scaled parts: t = sqrt((|x| + |z|) / 2) with |z|
  from the double-double s and one Newton step, scaled back by 2^(k/2), the other part
  |y| / 2t from the unscaled y (no intermediate underflow).
* sinh, cosh (for sin, cos): sinh x = S 2^n, cosh x = C 2^n with n = 0 below |x| = 20 (odd Taylor
  series below 1, (e - 1/e) / 2 with e a double-double above) and e^|x| / 2 beyond, so
  cosh x cos y stays finite past cosh's overflow; sin z = -i sinh(iz), cos z = cosh(iz).
* tanh (for tan): (sinh x cosh x + i sin y cos y) / (sinh^2 x + cos^2 y) for |x| <= 20, else
  +-1 + i 4 sin y cos y e^(-2|x|); tan z = -i tanh(iz).
* abs: NumPy's own formula, max * sqrt(fma(r, r, 1)) with r = min / max (its SIMD loop; bit for
  bit where NumPy's loop uses a fused multiply-add, <= 1 ulp elsewhere).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm import float_math_f64 as f64
from hlort.codegen.llvm import float_parts as fp
from hlort.codegen.llvm.double_double import const
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64, I64

INF = math.inf
NAN = math.nan
Pair = tuple[ir.Value, ir.Value]
ExpSplit = tuple[dd.DD, ir.Value]  # exp(x) = (hi + lo) * 2**n

_EXP_LIMIT = 1460.0  # e^1460 * 2^-1074 overflows
_SINH_COSH_SPLIT = 20.0  # above, e^-|x| is below 2^-57 of e^|x|: sinh, cosh = e^|x| / 2
_SINH_TAYLOR = tuple(1.0 / math.factorial(2 * k + 1) for k in range(10, 0, -1))  # 1/21! .. 1/3!
_TANH_SPLIT = 20.0  # above, tanh's real part rounds to +-1 and its imaginary part is exp-scaled
_EPS = 2.0**-52


# -- small helpers --------------------------------------------------------------------------------
def like(x: ir.Value, value: float) -> ir.Constant:
    """A constant of x's float type (f32 for c64 parts on GPU targets, else f64)."""
    return ir.Constant(x.type, float(value))


def is_inf(ctx: IrContext, x: ir.Value) -> ir.Value:
    return ctx.b.fcmp_ordered("==", ctx.fabs(x), like(x, INF))


def is_finite(ctx: IrContext, x: ir.Value) -> ir.Value:
    return ctx.b.fcmp_ordered("<", ctx.fabs(x), like(x, INF))


def is_zero(ctx: IrContext, x: ir.Value) -> ir.Value:
    return ctx.b.fcmp_ordered("==", x, like(x, 0.0))


def select_pair(ctx: IrContext, cond: ir.Value, a: Pair, b: Pair) -> Pair:
    return ctx.b.select(cond, a[0], b[0]), ctx.b.select(cond, a[1], b[1])


def with_specials(ctx: IrContext, value: Pair, cases: list[tuple[ir.Value, Pair]]) -> Pair:
    """``value`` overridden by the first case whose condition holds."""
    for cond, special in reversed(cases):
        value = select_pair(ctx, cond, special, value)
    return value


def finite_or_zero(ctx: IrContext, x: ir.Value) -> ir.Value:
    """x where finite, else 0: the finite formula never sees inf or NaN (specials replace it)."""
    return ctx.b.select(is_finite(ctx, x), x, like(x, 0.0))


def clamp_abs(ctx: IrContext, x: ir.Value, limit: float) -> ir.Value:
    """x with its magnitude clamped to ``limit``, sign kept."""
    big = ctx.b.fcmp_ordered(">", ctx.fabs(x), like(x, limit))
    return ctx.b.select(big, ctx.copysign(like(x, limit), x), x)


def exp_split(ctx: IrContext, x: ir.Value) -> ExpSplit:
    """exp(x) = (hi + lo) * 2**n for finite x, clamped to [-800, 1460]: below, every product
    v exp(x) with |v| <= 4 underflows to zero; above, every one with v != 0 overflows.
    (float_math_f64._exp_dd's reduction stays exact there: n * ln2_hi has < 44 bits.)"""
    b = ctx.b
    x = b.select(b.fcmp_ordered("<", x, const(-800.0)), const(-800.0), x)
    x = b.select(b.fcmp_ordered(">", x, const(_EXP_LIMIT)), const(_EXP_LIMIT), x)
    return f64._exp_dd(ctx, x, const(0.0))


def mul_pow2(ctx: IrContext, v: ir.Value, m: dd.DD, n: ir.Value) -> ir.Value:
    """v * (m.hi + m.lo) * 2^n rounded once, for finite v and m (m.hi in [1/4, 4] when n != 0)
    and an integral f64 n: a tiny v is scaled up first and the power of two is applied in two
    exact steps, so subnormal and overflowing results round once; a zero product keeps the sign
    of v * m.hi. n beyond [-2044, 2046] is clamped, which changes no result."""
    b = ctx.b
    tiny = b.fcmp_ordered("<", ctx.fabs(v), const(2.0**-900))
    vs = b.select(tiny, b.fmul(v, const(2.0**200)), v)
    n = b.fsub(n, b.select(tiny, const(200.0), const(0.0)))
    n = b.select(b.fcmp_ordered(">", n, const(2046.0)), const(2046.0), n)
    n = b.select(b.fcmp_ordered("<", n, const(-2044.0)), const(-2044.0), n)
    y = ctx.fma(vs, m[0], b.fmul(vs, m[1]))
    ni = b.fptosi(n, I64)
    up = b.icmp_signed(">=", ni, ir.Constant(I64, 0))
    half = b.ashr(ni, ir.Constant(I64, 1))
    floor = ir.Constant(I64, -1022)
    last_down = b.select(b.icmp_signed(">", ni, floor), ni, floor)
    last = b.select(up, b.sub(ni, half), last_down)
    first = b.sub(ni, last)
    r = b.fmul(b.fmul(y, fp.pow2(ctx, first, F64)), fp.pow2(ctx, last, F64))
    return b.select(is_zero(ctx, y), b.fmul(vs, m[0]), r)


def times_exp(ctx: IrContext, v: ir.Value, e: ExpSplit) -> ir.Value:
    """v * exp(x) rounded once, for any finite v."""
    return mul_pow2(ctx, v, e[0], e[1])


def sin_cos(ctx: IrContext, y: ir.Value) -> Pair:
    """(sin y, cos y); the two share one argument reduction after LLVM's CSE."""
    return f64.sin_f64(ctx, y), f64.cos_f64(ctx, y)


# -- |z| and log|z| -------------------------------------------------------------------------------
def numpy_abs(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """NumPy's complex absolute value (its SIMD loop): an infinite part gives inf, else a NaN
    part NaN, else max * sqrt(fma(r, r, 1)) with r = min / max (0 when max is 0)."""
    b = ctx.b
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    larger = b.select(b.fcmp_ordered(">", ax, ay), ax, ay)
    smaller = b.select(b.fcmp_ordered(">", ax, ay), ay, ax)
    ratio = b.fdiv(smaller, larger)
    ratio = b.select(is_zero(ctx, larger), const(0.0), ratio)
    r = b.fmul(ctx.intrinsic("sqrt", ctx.fma(ratio, ratio, const(1.0))), larger)
    r = b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), const(NAN), r)
    return b.select(b.or_(is_inf(ctx, x), is_inf(ctx, y)), const(INF), r)


def scaled_parts(ctx: IrContext, x: ir.Value, y: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(x 2^-k, y 2^-k, k) for finite x, y, with k an even integer (as f64, |k| <= 1674) that
    puts max(|x|, |y|) 2^-k in [1, 4): squares and their rounding errors stay normal."""
    b = ctx.b
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    larger = b.select(b.fcmp_ordered(">", ax, ay), ax, ay)
    tiny = b.fcmp_ordered("<", larger, const(2.0**-1000))
    pre = b.select(tiny, const(2.0**600), const(1.0))
    bits = b.bitcast(b.fmul(larger, pre), I64)
    e = b.sub(
        b.and_(b.lshr(bits, ir.Constant(I64, 52)), ir.Constant(I64, 0x7FF)), ir.Constant(I64, 1023)
    )
    e = b.select(b.icmp_signed("<", e, ir.Constant(I64, -1022)), ir.Constant(I64, -1022), e)
    e = b.select(b.icmp_signed(">", e, ir.Constant(I64, 1022)), ir.Constant(I64, 1022), e)
    e = b.and_(e, ir.Constant(I64, -2))
    f = fp.pow2(ctx, b.neg(e), F64)
    k = b.fsub(b.sitofp(e, F64), b.select(tiny, const(600.0), const(0.0)))
    return b.fmul(b.fmul(x, pre), f), b.fmul(b.fmul(y, pre), f), k


def pow2_half(ctx: IrContext, k: ir.Value) -> ir.Value:
    """2^(k/2) for an even k from scaled_parts (a normal double)."""
    return fp.pow2(ctx, ctx.b.fptosi(ctx.b.fmul(k, const(0.5)), I64), F64)


def sum_of_squares(ctx: IrContext, x: ir.Value, y: ir.Value) -> dd.DD:
    """x^2 + y^2 as a normalized double-double, to ~2^-106 relative (x, y scaled)."""
    b = ctx.b
    p, p_err = dd.two_prod(ctx, x, x)
    q, q_err = dd.two_prod(ctx, y, y)
    s, s_err = dd.two_sum(ctx, p, q)
    return dd.fast_two_sum(ctx, s, b.fadd(s_err, b.fadd(p_err, q_err)))


def _sqrt_dd(ctx: IrContext, s: dd.DD) -> ir.Value:
    """sqrt(s.hi + s.lo) with one Newton correction (s > 0): within ~0.5 ulp."""
    b = ctx.b
    h = ctx.intrinsic("sqrt", s[0])
    residual = b.fadd(ctx.fma(b.fneg(h), h, s[0]), s[1])
    return b.fadd(h, b.fdiv(residual, b.fmul(const(2.0), h)))


def log_abs(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """log|x + iy| for finite parts, not both zero."""
    b = ctx.b
    xs, ys, k = scaled_parts(ctx, x, y)
    s_hi, s_lo = sum_of_squares(ctx, xs, ys)
    l_hi, l_lo = f64._log_dd(ctx, s_hi)
    l_lo = b.fadd(l_lo, b.fdiv(s_lo, s_hi))
    hi, err = dd.two_sum(ctx, b.fmul(const(0.5), l_hi), b.fmul(k, const(fp.LN2_HI)))
    return b.fadd(hi, b.fadd(err, ctx.fma(const(0.5), l_lo, b.fmul(k, const(fp.LN2_LO)))))


# -- exp, log, sqrt -------------------------------------------------------------------------------
def cexp(ctx: IrContext, z: Pair) -> Pair:
    x, y = z
    e = exp_split(ctx, finite_or_zero(ctx, x))
    s, c = sin_cos(ctx, finite_or_zero(ctx, y))
    return exp_specials(ctx, z, (times_exp(ctx, c, e), times_exp(ctx, s, e)), s, c)


def exp_specials(ctx: IrContext, z: Pair, value: Pair, s: ir.Value, c: ir.Value) -> Pair:
    """exp's finite ``value`` with Annex G's results for infinite and NaN parts selected over it
    (s, c: sin y and cos y of the sanitized y); any float type."""
    b = ctx.b
    x, y = z
    k = lambda v: like(x, v)  # noqa: E731
    x_fin, y_fin = is_finite(ctx, x), is_finite(ctx, y)
    y_zero = is_zero(ctx, y)
    pos_inf = b.fcmp_ordered("==", x, k(INF))
    neg_inf = b.fcmp_ordered("==", x, k(-INF))
    nan2 = (k(NAN), k(NAN))
    return with_specials(
        ctx,
        value,
        [
            (b.and_(x_fin, b.not_(y_fin)), nan2),
            (b.and_(pos_inf, y_zero), (x, y)),
            (b.and_(pos_inf, y_fin), (ctx.copysign(k(INF), c), ctx.copysign(k(INF), s))),
            (pos_inf, (k(INF), k(NAN))),
            (b.and_(neg_inf, y_zero), (k(0.0), y)),
            (b.and_(neg_inf, y_fin), (ctx.copysign(k(0.0), c), ctx.copysign(k(0.0), s))),
            (neg_inf, (k(0.0), ctx.copysign(k(0.0), y))),
            (b.and_(ctx.is_nan(x), y_zero), (x, y)),
            (ctx.is_nan(x), nan2),
        ],
    )


def clog(ctx: IrContext, z: Pair) -> Pair:
    return log_with(ctx, z, log_abs, f64.atan2_f64)


def log_with(ctx: IrContext, z: Pair, log_abs_fn, atan2_fn) -> Pair:
    """log z = log|z| + i atan2(y, x) from a ``log_abs_fn`` of finite parts (not both zero),
    with Annex G's values for zero, infinite and NaN parts; any float type."""
    b = ctx.b
    x, y = z
    k = lambda v: like(x, v)  # noqa: E731
    regular = b.and_(is_finite(ctx, x), is_finite(ctx, y))
    both_zero = b.and_(is_zero(ctx, x), is_zero(ctx, y))
    safe = b.and_(regular, b.not_(both_zero))
    re = log_abs_fn(ctx, b.select(safe, x, k(1.0)), b.select(safe, y, k(0.0)))
    re = b.select(both_zero, k(-INF), re)
    any_nan = b.or_(ctx.is_nan(x), ctx.is_nan(y))
    any_inf = b.or_(is_inf(ctx, x), is_inf(ctx, y))
    re = b.select(any_nan, k(NAN), re)
    re = b.select(any_inf, k(INF), re)
    return re, atan2_fn(ctx, y, x)


def sqrt_safe(ctx: IrContext, z: Pair) -> tuple[Pair, ir.Value]:
    """(z with non-finite or all-zero parts replaced by 1 + 0i, whether z was kept)."""
    b = ctx.b
    x, y = z
    regular = b.and_(is_finite(ctx, x), is_finite(ctx, y))
    both_zero = b.and_(is_zero(ctx, x), is_zero(ctx, y))
    safe = b.and_(regular, b.not_(both_zero))
    return (b.select(safe, x, like(x, 1.0)), b.select(safe, y, like(y, 0.0))), safe


def csqrt(ctx: IrContext, z: Pair) -> Pair:
    b = ctx.b
    (xs0, ys0), safe = sqrt_safe(ctx, z)
    xs, ys, k = scaled_parts(ctx, xs0, ys0)
    modulus = _sqrt_dd(ctx, sum_of_squares(ctx, xs, ys))
    t = b.fmul(
        ctx.intrinsic("sqrt", b.fmul(const(0.5), b.fadd(modulus, ctx.fabs(xs)))), pow2_half(ctx, k)
    )
    u = ctx.fabs(b.fmul(const(0.5), b.fdiv(ys0, t)))
    return sqrt_specials(ctx, z, sqrt_parts(ctx, z, xs, t, u))


def sqrt_parts(ctx: IrContext, z: Pair, xs: ir.Value, t: ir.Value, u: ir.Value) -> Pair:
    """Algorithm 312's result from t = sqrt((|x| + |z|) / 2) and u = |y| / 2t."""
    b = ctx.b
    positive = b.fcmp_ordered(">", xs, like(xs, 0.0))
    re = b.select(b.or_(positive, is_zero(ctx, xs)), t, u)
    im = b.select(positive, u, t)
    return re, ctx.copysign(im, z[1])


def sqrt_specials(ctx: IrContext, z: Pair, value: Pair) -> Pair:
    """csqrt's finite ``value`` with Annex G's special parts selected over it; any float type."""
    b = ctx.b
    x, y = z
    k = lambda v: like(x, v)  # noqa: E731
    both_zero = b.and_(is_zero(ctx, x), is_zero(ctx, y))
    nan2 = (k(NAN), k(NAN))
    y_nan = ctx.is_nan(y)
    neg_inf = b.fcmp_ordered("==", x, k(-INF))
    pos_inf = b.fcmp_ordered("==", x, k(INF))
    return with_specials(
        ctx,
        value,
        [
            (both_zero, (k(0.0), y)),
            (is_inf(ctx, y), (k(INF), y)),
            (ctx.is_nan(x), nan2),
            (b.and_(neg_inf, y_nan), (k(NAN), ctx.copysign(k(INF), y))),
            (neg_inf, (k(0.0), ctx.copysign(k(INF), y))),
            (b.and_(pos_inf, y_nan), (x, k(NAN))),
            (pos_inf, (x, ctx.copysign(k(0.0), y))),
            (y_nan, nan2),
        ],
    )


# -- hyperbolic and circular functions ------------------------------------------------------------
def sinh_cosh(ctx: IrContext, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(S, C, n) with sinh x = S 2^n and cosh x = C 2^n, for finite x; n = 0 below |x| = 20."""
    b = ctx.b
    a = ctx.fabs(x)
    (e_hi, e_lo), n = exp_split(ctx, a)
    scale = fp.pow2(
        ctx,
        b.fptosi(b.select(b.fcmp_ordered("<", a, const(_SINH_COSH_SPLIT)), n, const(0.0)), I64),
        F64,
    )
    big_e, big_e_lo = b.fmul(e_hi, scale), b.fmul(e_lo, scale)  # e^|x| exactly scaled
    inv = b.fdiv(const(1.0), big_e)
    inv_lo = b.fmul(inv, b.fsub(ctx.fma(b.fneg(inv), big_e, const(1.0)), b.fmul(big_e_lo, inv)))
    c_hi, c_err = dd.two_sum(ctx, big_e, inv)
    cosh = b.fmul(const(0.5), b.fadd(c_hi, b.fadd(c_err, b.fadd(big_e_lo, inv_lo))))
    s_hi, s_err = dd.two_sum(ctx, big_e, b.fneg(inv))
    sinh = b.fmul(const(0.5), b.fadd(s_hi, b.fadd(s_err, b.fsub(big_e_lo, inv_lo))))
    a2 = b.fmul(a, a)
    series = ctx.fma(b.fmul(a, a2), ctx.horner(a2, _SINH_TAYLOR), a)
    sinh = b.select(b.fcmp_ordered("<", a, const(1.0)), series, sinh)
    small = b.fcmp_ordered("<", a, const(_SINH_COSH_SPLIT))
    half_e = b.fmul(const(0.5), e_hi)
    c = b.select(small, cosh, half_e)
    s = ctx.copysign(b.select(small, sinh, half_e), x)
    return s, c, b.select(small, const(0.0), n)


def _hyperbolic(ctx: IrContext, z: Pair, odd: bool) -> tuple[Pair, Pair]:
    """sinh (odd) or cosh of z, finite parts: (S cos y, C sin y) or (C cos y, S sin y) scaled by
    2^n; and (sin y, cos y) for the special cases."""
    x, y = finite_or_zero(ctx, z[0]), finite_or_zero(ctx, z[1])
    s_x, c_x, n = sinh_cosh(ctx, x)
    sin_y, cos_y = sin_cos(ctx, y)
    first, second = (s_x, c_x) if odd else (c_x, s_x)
    zero = const(0.0)
    value = mul_pow2(ctx, cos_y, (first, zero), n), mul_pow2(ctx, sin_y, (second, zero), n)
    return value, (sin_y, cos_y)


def csinh(ctx: IrContext, z: Pair) -> Pair:
    value, (sin_y, cos_y) = _hyperbolic(ctx, z, odd=True)
    return sinh_specials(ctx, z, value, sin_y, cos_y)


def sinh_specials(ctx: IrContext, z: Pair, value: Pair, sin_y: ir.Value, cos_y: ir.Value) -> Pair:
    """csinh's finite ``value`` with Annex G's special parts over it; any float type."""
    b = ctx.b
    x, y = z
    k = lambda v: like(x, v)  # noqa: E731
    x_fin, y_fin, x_inf = is_finite(ctx, x), is_finite(ctx, y), is_inf(ctx, x)
    y_zero = is_zero(ctx, y)
    inf_re = ctx.copysign(k(INF), cos_y)
    inf_re = b.select(b.fcmp_ordered("<", x, k(0.0)), b.fneg(inf_re), inf_re)
    nan2 = (k(NAN), k(NAN))
    return with_specials(
        ctx,
        value,
        [
            (b.and_(b.and_(x_fin, b.not_(y_fin)), is_zero(ctx, x)), (x, b.fsub(y, y))),
            (b.and_(x_fin, b.not_(y_fin)), nan2),
            (b.and_(x_inf, y_zero), (x, y)),
            (b.and_(x_inf, y_fin), (inf_re, ctx.copysign(k(INF), sin_y))),
            (x_inf, (k(INF), b.fsub(y, y))),
            (b.and_(ctx.is_nan(x), y_zero), (k(NAN), y)),
            (ctx.is_nan(x), nan2),
        ],
    )


def ccosh(ctx: IrContext, z: Pair) -> Pair:
    value, (sin_y, cos_y) = _hyperbolic(ctx, z, odd=False)
    return cosh_specials(ctx, z, value, sin_y, cos_y)


def cosh_specials(ctx: IrContext, z: Pair, value: Pair, sin_y: ir.Value, cos_y: ir.Value) -> Pair:
    """ccosh's finite ``value`` with Annex G's special parts over it; any float type."""
    b = ctx.b
    x, y = z
    k = lambda v: like(x, v)  # noqa: E731
    x_fin, y_fin, x_inf = is_finite(ctx, x), is_finite(ctx, y), is_inf(ctx, x)
    y_zero = is_zero(ctx, y)
    sign_x = ctx.copysign(k(1.0), x)
    inf_im = b.fmul(ctx.copysign(k(INF), sin_y), sign_x)
    return with_specials(
        ctx,
        value,
        [
            (b.and_(b.and_(x_fin, b.not_(y_fin)), is_zero(ctx, x)), (b.fsub(y, y), k(0.0))),
            (b.and_(x_fin, b.not_(y_fin)), (b.fsub(y, y), k(NAN))),
            (b.and_(x_inf, y_zero), (k(INF), b.fmul(y, sign_x))),
            (b.and_(x_inf, y_fin), (ctx.copysign(k(INF), cos_y), inf_im)),
            (x_inf, (k(INF), b.fsub(y, y))),
            (b.and_(ctx.is_nan(x), y_zero), (k(NAN), y)),
            (ctx.is_nan(x), (k(NAN), k(NAN))),
        ],
    )


def ctanh(ctx: IrContext, z: Pair) -> Pair:
    b = ctx.b
    x, y = z
    xf, yf = finite_or_zero(ctx, x), finite_or_zero(ctx, y)
    a = ctx.fabs(xf)
    s_x, c_x, _ = sinh_cosh(ctx, clamp_abs(ctx, xf, _TANH_SPLIT))
    sin_y, cos_y = sin_cos(ctx, yf)
    cos2 = b.fmul(cos_y, cos_y)
    keep_sinh = b.fcmp_ordered(">", ctx.fabs(s_x), b.fmul(ctx.fabs(cos_y), const(_EPS)))
    den = b.select(keep_sinh, b.fadd(cos2, b.fmul(s_x, s_x)), cos2)
    near = (b.fdiv(b.fmul(s_x, c_x), den), b.fdiv(b.fmul(sin_y, cos_y), den))
    e = exp_split(ctx, b.fmul(const(-2.0), a))
    four_sin_cos = b.fmul(b.fmul(const(4.0), sin_y), cos_y)
    far = (ctx.copysign(const(1.0), xf), times_exp(ctx, four_sin_cos, e))
    value = select_pair(ctx, b.fcmp_ordered(">", a, const(_TANH_SPLIT)), far, near)
    return tanh_specials(ctx, z, value, sin_y, cos_y)


def tanh_specials(ctx: IrContext, z: Pair, value: Pair, sin_y: ir.Value, cos_y: ir.Value) -> Pair:
    """ctanh's finite ``value`` with Annex G's special parts over it; any float type."""
    b = ctx.b
    x, y = z
    k = lambda v: like(x, v)  # noqa: E731
    y_fin = is_finite(ctx, y)
    big_y = b.and_(y_fin, b.fcmp_ordered(">", ctx.fabs(y), k(1.0)))
    inf_im = b.select(big_y, ctx.copysign(k(0.0), b.fmul(sin_y, cos_y)), ctx.copysign(k(0.0), y))
    y_zero = is_zero(ctx, y)
    other_re = b.select(y_zero, x, b.select(is_zero(ctx, x), x, k(NAN)))
    return with_specials(
        ctx,
        value,
        [
            (is_inf(ctx, x), (ctx.copysign(k(1.0), x), inf_im)),
            (b.not_(b.and_(is_finite(ctx, x), y_fin)), (other_re, b.select(y_zero, y, k(NAN)))),
        ],
    )


def rotate_in(z: Pair, ctx: IrContext) -> Pair:
    """i z = (-y, x)."""
    return ctx.b.fneg(z[1]), z[0]


def csin(ctx: IrContext, z: Pair, sinh=None) -> Pair:
    """-i sinh(iz), with glibc's +inf imaginary part for an infinite or NaN real part when the
    imaginary part is infinite (``sinh``: the csinh to use, this module's by default)."""
    b = ctx.b
    re, im = (sinh or csinh)(ctx, rotate_in(z, ctx))
    value = (im, b.fneg(re))
    odd_case = b.and_(b.not_(is_finite(ctx, z[0])), is_inf(ctx, z[1]))
    return select_pair(ctx, odd_case, (like(re, NAN), like(re, INF)), value)


def ccos(ctx: IrContext, z: Pair, cosh=None) -> Pair:
    return (cosh or ccosh)(ctx, rotate_in(z, ctx))


def ctan(ctx: IrContext, z: Pair, tanh=None) -> Pair:
    re, im = (tanh or ctanh)(ctx, rotate_in(z, ctx))
    return im, ctx.b.fneg(re)


def divide_specials(ctx: IrContext, a: Pair, d: Pair, q: Pair, add_parts=None) -> Pair:
    """XLA's fixes where Smith's quotient ``q`` is NaN + NaN i: a / 0, inf / finite and
    finite / inf (the interpreter's ``complex_divide``), in a's float type. ``add_parts(ctx,
    x, y)`` sums the finite / inf case's products (default: one fadd; complex_math_f32's keeps
    the sign and zero-ness of an f32 sum that overflows where the interpreter's f64 one does
    not)."""
    b = ctx.b
    (ar, ai), (br, bi) = a, d
    k = lambda v: like(ar, v)  # noqa: E731
    mul, add, sub, sel = b.fmul, b.fadd, b.fsub, b.select
    total = add_parts or (lambda ctx, x, y: ctx.b.fadd(x, y))
    not_nan = lambda v: b.fcmp_ordered("ord", v, v)  # noqa: E731
    zero_denom = b.and_(b.and_(is_zero(ctx, br), is_zero(ctx, bi)), b.or_(not_nan(ar), not_nan(ai)))
    s = ctx.copysign(k(INF), br)
    zr, zi = mul(s, ar), mul(s, ai)
    a_r_inf, a_i_inf = is_inf(ctx, ar), is_inf(ctx, ai)
    inf_num = b.and_(b.or_(a_r_inf, a_i_inf), b.and_(is_finite(ctx, br), is_finite(ctx, bi)))
    ar1 = ctx.copysign(sel(a_r_inf, k(1.0), k(0.0)), ar)
    ai1 = ctx.copysign(sel(a_i_inf, k(1.0), k(0.0)), ai)
    nr = mul(k(INF), add(mul(ar1, br), mul(ai1, bi)))
    ni = mul(k(INF), sub(mul(ai1, br), mul(ar1, bi)))
    b_r_inf, b_i_inf = is_inf(ctx, br), is_inf(ctx, bi)
    inf_den = b.and_(b.or_(b_r_inf, b_i_inf), b.and_(is_finite(ctx, ar), is_finite(ctx, ai)))
    br1 = ctx.copysign(sel(b_r_inf, k(1.0), k(0.0)), br)
    bi1 = ctx.copysign(sel(b_i_inf, k(1.0), k(0.0)), bi)
    dr = mul(k(0.0), total(ctx, mul(ar, br1), mul(ai, bi1)))
    di = mul(k(0.0), total(ctx, mul(ai, br1), b.fneg(mul(ar, bi1))))
    cr, ci = q
    both_nan = b.and_(ctx.is_nan(cr), ctx.is_nan(ci))
    rr, ri = cr, ci
    for cond, xr, xi in ((inf_den, dr, di), (inf_num, nr, ni), (zero_denom, zr, zi)):
        take = b.and_(both_nan, cond)  # the first matching condition wins: applied last
        rr, ri = sel(take, xr, rr), sel(take, xi, ri)
    return rr, ri


__all__ = [
    "cexp",
    "clog",
    "csqrt",
    "csinh",
    "ccosh",
    "ctanh",
    "csin",
    "ccos",
    "ctan",
    "numpy_abs",
    "log_abs",
    "sum_of_squares",
    "select_pair",
    "with_specials",
    "like",
    "exp_specials",
    "log_with",
    "sqrt_safe",
    "sqrt_parts",
    "sqrt_specials",
    "sinh_specials",
    "cosh_specials",
    "tanh_specials",
    "divide_specials",
]
