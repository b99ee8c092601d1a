"""f64 tanh, sin, cos, tan, atan2 and cbrt as straight-line, vectorizable LLVM IR.

float_math.py dispatches here for f64 (the f32 forms evaluate in f64 with simpler code). Each
function is branch-free (special cases are selects) and nearly correctly rounded: the parts
that would lose bits are carried as double-doubles (double_double.py) and rounded once.

* sin, cos, tan: exact reduction by pi/2 for every finite double (pi_reduction_f64.py), then
  fdlibm-shaped kernels on the double-double argument (minimax polynomials, relative error
  below 2**-57 on |a| <= pi/4); tan = sin/cos (or -cos/sin) divided with one correction step.
* tanh: |x| < 0.55 an odd minimax polynomial; above, 1 - 2 / (exp(2|x|) + 1) in double-double
  with a double-double exp; |x| >= 22 saturates to +-1.
* atan2: t = min/max(|x|, |y|) as a double-double quotient, atan(t) by fdlibm's reduction
  (breakpoints 7/16, 11/16: atan(1/2) + atan((2t-1)/(2+t)), pi/4 + atan((t-1)/(t+1))) and a
  degree-23 odd minimax polynomial, then pi/2 - a and pi - a in double-double; C99's signed
  zeros, infinities and NaN.
* cbrt: exponent split into 3q + r, a degree-4 minimax seed on [1, 2), one Halley step and one
  Newton step whose residual x - y**3 is exact, so perfect cubes come out exact.

Minimax coefficients are relative-error Remez fits computed offline with mpmath
(tests/codegen/make_minimax_f64.py regenerates them); Taylor and atanh series coefficients are
exact rationals. Measured against mpmath (300-4000 bits, ~40k inputs each, the hard cases of
test_float_math_f64 included) the largest errors are 0.50 (cbrt), 0.56 (atan2), 0.66 (tanh),
0.75 (sin), 0.75 (cos) and 0.83 (tan) ulp. f64 pow lives in pow_f64.py (table-driven, outlined);
_exp_dd here serves tanh and, with _log_dd, the complex functions.
"""

from __future__ import annotations

import math
from fractions import Fraction

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm.double_double import const
from hlort.codegen.llvm.float_parts import LN2_HI, LN2_LO, keep_nan, pow2, split_mantissa
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64, I64
from hlort.codegen.llvm.pi_reduction_f64 import (
    PI,
    PIO2,
    arctan_inverse,
    pi_fraction,
    reduce_quarter_turns,
)

INF = math.inf
NAN = math.nan
_PI = (const(PI[0]), const(PI[1]))
_PIO2 = (const(PIO2[0]), const(PIO2[1]))

# -- sin and cos kernels on |a| <= pi/4 ----------------------------------------------------------
# sin(a) = a + a**3 * S(a**2), cos(a) = 1 - a**2/2 + a**4 * C(a**2), highest degree first.
_SIN = (
    1.5895815758965526e-10,
    -2.505074081429428e-08,
    2.755731357836101e-06,
    -0.00019841269829469672,
    0.008333333333321974,
    -0.1666666666666663,
)
_COS = (
    -1.135824865407212e-11,
    2.0875695403044013e-09,
    -2.755731414020977e-07,
    2.4801587288719753e-05,
    -0.001388888888887285,
    0.041666666666666595,
)


def _sin_cos_kernels(ctx: IrContext, a: dd.DD) -> tuple[dd.DD, dd.DD]:
    """(sin, cos) of x + y as unnormalized double-doubles (fdlibm's __kernel_sin/cos forms)."""
    b = ctx.b
    x, y = a
    z = b.fmul(x, x)
    v = b.fmul(z, x)
    r = ctx.horner(z, _SIN[:-1])
    sin_tail = b.fsub(
        b.fmul(v, const(_SIN[-1])),
        b.fsub(b.fmul(z, b.fsub(b.fmul(const(0.5), y), b.fmul(v, r))), y),
    )
    rc = b.fmul(z, ctx.horner(z, _COS))
    hz = b.fmul(const(0.5), z)
    w = b.fsub(const(1.0), hz)
    cos_tail = b.fadd(b.fsub(b.fsub(const(1.0), w), hz), b.fsub(b.fmul(z, rc), b.fmul(x, y)))
    return (x, sin_tail), (w, cos_tail)


def _trig(ctx: IrContext, x: ir.Value, which: str) -> ir.Value:
    b = ctx.b
    ax = ctx.fabs(x)
    q, a = reduce_quarter_turns(ctx, ax)
    (s_hi, s_tail), (c_hi, c_tail) = _sin_cos_kernels(ctx, a)
    odd = b.trunc(q, ir.IntType(1))
    upper = b.icmp_unsigned(">=", q, ir.Constant(I64, 2))
    if which == "tan":
        sin_v = dd.fast_two_sum(ctx, s_hi, s_tail)
        cos_v = dd.fast_two_sum(ctx, c_hi, c_tail)
        num = dd.select_dd(ctx, odd, cos_v, sin_v)
        den = dd.select_dd(ctx, odd, sin_v, cos_v)
        inv = b.fdiv(const(1.0), den[0])
        ratio = b.fmul(num[0], inv)
        residual = b.fsub(
            b.fadd(ctx.fma(b.fneg(ratio), den[0], num[0]), num[1]), b.fmul(ratio, den[1])
        )
        r = ctx.fma(residual, inv, ratio)
        r = b.select(odd, b.fneg(r), r)
        negative = b.fcmp_ordered("<", x, const(0.0))
    else:
        sin_r = b.fadd(s_hi, s_tail)
        cos_r = b.fadd(c_hi, c_tail)
        if which == "sin":
            r = b.select(odd, cos_r, sin_r)
            r = b.select(upper, b.fneg(r), r)
            negative = b.fcmp_ordered("<", x, const(0.0))
        else:
            r = b.select(odd, sin_r, cos_r)
            flip = b.xor(odd, upper)
            r = b.select(flip, b.fneg(r), r)
            negative = None
    if negative is not None:
        r = b.select(negative, b.fneg(r), r)
        r = b.select(b.fcmp_ordered("==", x, const(0.0)), x, r)  # keeps -0
    r = b.select(b.fcmp_ordered("==", ax, const(INF)), const(NAN), r)
    return keep_nan(ctx, x, r)


def sin_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    return _trig(ctx, x, "sin")


def cos_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    return _trig(ctx, x, "cos")


def tan_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    return _trig(ctx, x, "tan")


# -- exp and log in double-double ----------------------------------------------------------------
_EXP_TAIL = tuple(1.0 / math.factorial(k) for k in range(14, 2, -1))  # r**3/3! .. r**14/14!


def _exp_dd(ctx: IrContext, xh: ir.Value, xl: ir.Value) -> tuple[dd.DD, ir.Value]:
    """((e_hi, e_lo), n) with exp(xh + xl) = (e_hi + e_lo) * 2**n, |xh| <= 1100 and finite,
    e_hi + e_lo in [0.7, 1.42] good to ~2**-60 relative."""
    b = ctx.b
    n = ctx.intrinsic("roundeven", b.fmul(xh, const(1.4426950408889634)))
    r0 = ctx.fma(b.fneg(n), const(LN2_HI), xh)  # exact: n * LN2_HI has <= 43 bits
    correction = b.fsub(xl, b.fmul(n, const(LN2_LO)))
    rh, rl = dd.two_sum(ctx, r0, correction)
    sq, sq_err = dd.two_prod(ctx, rh, rh)
    cube_part = b.fmul(b.fmul(sq, rh), ctx.horner(rh, _EXP_TAIL))  # r**3/3! + ...
    half_sq = b.fmul(const(0.5), sq)  # exact
    tail = b.fadd(b.fmul(const(0.5), sq_err), cube_part)
    tail = b.fadd(tail, ctx.fma(rl, rh, rl))  # rl * exp(rh) ~ rl * (1 + rh)
    one_r, one_r_err = dd.fast_two_sum(ctx, const(1.0), rh)
    hi, hi_err = dd.fast_two_sum(ctx, one_r, half_sq)
    lo = b.fadd(b.fadd(one_r_err, hi_err), tail)
    return dd.fast_two_sum(ctx, hi, lo), n


_THIRD = dd.split(Fraction(1, 3))
_ATANH_TAIL = tuple(1.0 / (2 * k + 5) for k in range(10, -1, -1))  # 1/25 .. 1/5


def _log_dd(ctx: IrContext, ax: ir.Value) -> dd.DD:
    """log(ax) for finite ax > 0 (subnormals too) as a double-double, ~2**-66 relative.

    ax = m * 2**e, m in [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s) = 2 s (1 + z B(z)), s = f/(2+f),
    f = m - 1 (exact), z = s**2 <= 0.0295: s, z, z/3 and the products are double-doubles, only
    z**2 (1/5 + z/7 + ...) (< 2**-12 of the whole) is plain f64.
    """
    b = ctx.b
    m, e = split_mantissa(ctx, ax)
    f = b.fsub(m, const(1.0))
    s = dd.div_dd(ctx, (f, const(0.0)), dd.fast_two_sum(ctx, const(2.0), f))
    z = dd.mul_dd(ctx, s, s)
    w = b.fmul(z[0], ctx.horner(z[0], _ATANH_TAIL))
    third_plus = dd.fast_two_sum(ctx, const(_THIRD[0]), w)
    inner = (third_plus[0], b.fadd(third_plus[1], const(_THIRD[1])))
    series = dd.mul_dd(ctx, s, dd.mul_dd(ctx, z, inner))  # s * z * (1/3 + z/5 + ...)
    h, h_err = dd.fast_two_sum(ctx, s[0], series[0])
    log_m_lo = b.fadd(h_err, b.fadd(s[1], series[1]))
    two = const(2.0)
    hi, hi_err = dd.two_sum(ctx, b.fmul(e, const(LN2_HI)), b.fmul(two, h))
    lo = b.fadd(hi_err, ctx.fma(two, log_m_lo, b.fmul(e, const(LN2_LO))))
    return dd.fast_two_sum(ctx, hi, lo)


# -- tanh ----------------------------------------------------------------------------------------
# tanh(x) = x + x**3 * T(x**2) on |x| <= 0.55 (relative error < 2**-58 with these doubles).
_TANH = (
    -1.949468993230957e-05,
    8.331645030238173e-05,
    -0.00023338156647539327,
    0.0005884444863082401,
    -0.0014555428456750014,
    0.0035920920304058778,
    -0.0088632326014361,
    0.02186948838585534,
    -0.053968253963760586,
    0.13333333333326622,
    -0.333333333333333,
)
_TANH_POLY_LIMIT = 0.55
_TANH_SATURATION = 22.0  # tanh(x) rounds to 1 from x = 19.07 on


def tanh_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    b = ctx.b
    ax = ctx.fabs(x)
    x2 = b.fmul(x, x)
    small = ctx.copysign(ctx.fma(b.fmul(x, x2), ctx.horner(x2, _TANH), x), x)  # tanh(-0) = -0
    a = b.select(b.fcmp_ordered("<", ax, const(_TANH_SATURATION)), ax, const(_TANH_SATURATION))
    (eh, el), n = _exp_dd(ctx, b.fmul(const(2.0), a), const(0.0))
    scale = pow2(ctx, b.fptosi(n, I64), F64)  # exact: n <= 64
    dh, d_err = dd.fast_two_sum(ctx, b.fmul(eh, scale), const(1.0))
    qh, ql = dd.div_dd(ctx, (const(2.0), const(0.0)), (dh, b.fadd(d_err, b.fmul(el, scale))))
    th, tl = dd.fast_two_sum(ctx, const(1.0), b.fneg(qh))
    large = ctx.copysign(b.fadd(th, b.fsub(tl, ql)), x)
    r = b.select(b.fcmp_ordered("<", ax, const(_TANH_POLY_LIMIT)), small, large)
    return keep_nan(ctx, x, r)


# -- atan2 ---------------------------------------------------------------------------------------
# atan(z) = z + z**3 * A(z**2) on |z| <= 7/16 (relative error < 2**-57 with these doubles).
_ATAN = (
    -0.016265589053611997,
    0.03651034372521706,
    -0.049759167267724426,
    0.058333243941930416,
    -0.06661034182626008,
    0.07691872246291664,
    -0.09090886875901641,
    0.1111111039507562,
    -0.14285714272261751,
    0.19999999999873674,
    -0.3333333333333292,
)


_ATAN_HALF = dd.split(arctan_inverse(2, 200))
_PIO4 = dd.split(pi_fraction(400) / 4)


def _atan_unit(ctx: IrContext, t: dd.DD) -> dd.DD:
    """atan(t) for t in [0, 1] given as a double-double, as a double-double."""
    b = ctx.b
    th, tl = t
    one, two, zero = const(1.0), const(2.0), const(0.0)
    low = b.fcmp_ordered("<", th, const(7 / 16))
    middle = b.fcmp_ordered("<", th, const(11 / 16))
    # middle: (2t - 1) / (2 + t); high: (t - 1) / (t + 1); numerators exact, denominators dd.
    twice = b.fmul(two, th)
    num_mid = (b.fsub(twice, one), b.fmul(two, tl))
    den_mid = dd.fast_two_sum(ctx, two, th)
    num_high = (b.fsub(th, one), tl)
    den_high = dd.fast_two_sum(ctx, one, th)
    num = dd.select_dd(ctx, middle, num_mid, num_high)
    den = dd.select_dd(ctx, middle, den_mid, den_high)
    den = (den[0], b.fadd(den[1], tl))
    num = dd.select_dd(ctx, low, t, num)
    den = dd.select_dd(ctx, low, (one, zero), den)
    zh, zl = dd.div_dd(ctx, num, den)
    z2 = b.fmul(zh, zh)
    poly = b.fmul(b.fmul(zh, z2), ctx.horner(z2, _ATAN))
    zl = ctx.fma(b.fneg(zl), z2, zl)  # zl / (1 + z**2)
    base_hi = b.select(middle, const(_ATAN_HALF[0]), const(_PIO4[0]))
    base_lo = b.select(middle, const(_ATAN_HALF[1]), const(_PIO4[1]))
    base_hi = b.select(low, zero, base_hi)
    base_lo = b.select(low, zero, base_lo)
    s, s_err = dd.two_sum(ctx, base_hi, zh)
    return dd.fast_two_sum(ctx, s, b.fadd(b.fadd(s_err, base_lo), b.fadd(zl, poly)))


def atan2_f64(ctx: IrContext, y: ir.Value, x: ir.Value) -> ir.Value:
    b = ctx.b
    zero = const(0.0)
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    swap = b.fcmp_ordered(">", ay, ax)
    num = b.select(swap, ax, ay)
    den = b.select(swap, ay, ax)
    th = b.fdiv(num, den)
    tl = b.fdiv(ctx.fma(b.fneg(th), den, num), den)
    regular = b.and_(b.fcmp_ordered(">", den, zero), b.fcmp_ordered("<", den, const(INF)))
    both_inf = b.and_(b.fcmp_ordered("==", ax, const(INF)), b.fcmp_ordered("==", ay, const(INF)))
    th = b.select(b.fcmp_ordered("==", den, zero), zero, th)
    th = b.select(both_inf, const(1.0), th)
    tl = b.select(regular, tl, zero)
    a = _atan_unit(ctx, (th, tl))
    a = dd.select_dd(ctx, swap, dd.sub_from_const(ctx, _PIO2, a), a)
    negative_x = b.icmp_signed("<", b.bitcast(x, I64), ir.Constant(I64, 0))
    a = dd.select_dd(ctx, negative_x, dd.sub_from_const(ctx, _PI, a), a)
    r = ctx.copysign(b.fadd(a[0], a[1]), y)
    return b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), const(NAN), r)


# -- cbrt ----------------------------------------------------------------------------------------
_CBRT_SEED = (
    -0.01060389670029072,
    0.08609134750760279,
    -0.3006115601307248,
    0.7181539396495297,
    0.5069793773356551,
)  # cbrt on [1, 2], 2**-16.7


def cbrt_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    b = ctx.b
    ax = ctx.fabs(x)
    subnormal = b.fcmp_ordered("<", ax, const(2.0**-1022))
    scaled = b.select(subnormal, b.fmul(ax, const(2.0**54)), ax)
    bits = b.bitcast(scaled, I64)
    exponent = b.sub(b.lshr(bits, ir.Constant(I64, 52)), ir.Constant(I64, 1023))
    exponent = b.sub(exponent, b.select(subnormal, ir.Constant(I64, 54), ir.Constant(I64, 0)))
    e = b.sitofp(exponent, F64)
    m = b.bitcast(
        b.or_(b.and_(bits, ir.Constant(I64, (1 << 52) - 1)), ir.Constant(I64, 0x3FF << 52)), F64
    )
    q = ctx.intrinsic("floor", b.fmul(b.fadd(e, const(0.5)), const(1 / 3)))
    rem = b.fsub(e, b.fmul(const(3.0), q))  # 0, 1 or 2
    rem1 = b.fcmp_ordered("==", rem, const(1.0))
    rem2 = b.fcmp_ordered("==", rem, const(2.0))
    xs = b.fmul(m, b.select(rem1, const(2.0), b.select(rem2, const(4.0), const(1.0))))
    root_scale = b.select(
        rem1, const(2 ** (1 / 3)), b.select(rem2, const(4 ** (1 / 3)), const(1.0))
    )
    y = b.fmul(ctx.horner(m, _CBRT_SEED), root_scale)
    y3 = b.fmul(b.fmul(y, y), y)
    y = b.fmul(y, b.fdiv(ctx.fma(const(2.0), xs, y3), ctx.fma(const(2.0), y3, xs)))  # Halley
    sq, sq_err = dd.two_prod(ctx, y, y)
    cube, cube_err = dd.two_prod(ctx, y, sq)
    cube_err = ctx.fma(y, sq_err, cube_err)
    residual = b.fsub(b.fsub(xs, cube), cube_err)  # xs - cube is exact (Sterbenz)
    y = b.fadd(y, b.fdiv(residual, b.fmul(const(3.0), sq)))  # Newton on the exact residual
    r = ctx.copysign(b.fmul(y, pow2(ctx, b.fptosi(q, I64), F64)), x)
    special = b.or_(b.fcmp_ordered("==", ax, const(0.0)), b.fcmp_unordered("uno", ax, ax))
    special = b.or_(special, b.fcmp_ordered("==", ax, const(INF)))
    return b.select(special, x, r)
