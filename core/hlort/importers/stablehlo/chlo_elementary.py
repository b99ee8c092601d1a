"""CHLO elementary functions decomposed into HLO elementwise ops.

The formulas are the ones StableHLO's own CHLO legalization uses (they are what produced the
expected values of StableHLO's test corpus), evaluated in the same precision: most run in the
operand's type; sinh and cosh upcast f16/bf16 to f32 first. Accuracy (in the operand's type, over
the finite domain, given correctly rounded elementwise ops):

- asin, acos, asinh, acosh (real and complex; complex by a modified Hull et al. algorithm),
  atanh, atan, tan, sinh, cosh, square: within a few ULP; overflow-safe for large arguments
  (log(2) + log(x) branches) and cancellation-free near the branch points.
- complex tan, atanh, sinh, cosh use the textbook identities and may lose accuracy near
  overflow (as XLA's do).
- next_after is exact (bit manipulation).
"""

from __future__ import annotations

from hlort.importers.stablehlo.conversion_context import OpContext, chlo_unary, converter
from hlort.importers.stablehlo.hlo_math import (
    E,
    abs_,
    atan2,
    complex_,
    cos,
    exp,
    expm1,
    imag,
    log,
    log1p,
    maximum,
    minimum,
    real,
    select,
    sign,
    sin,
    sqrt,
    tanh,
    with_upcast,
)


def _x(cx: OpContext) -> E:
    return E(cx.b, cx.operand(0))


# -- inverse hyperbolic and trigonometric functions ---------------------------------------------


@chlo_unary("acosh")
def acosh(x: E) -> E:
    if x.dtype.is_complex:
        parts = _asin_acos_parts(x)
        acos_imag = select(parts["signed_y"].lt(0), parts["imag"], -parts["imag"])
        w = complex_(-acos_imag, parts["acos_real"])
        return select(parts["signed_y"].lt(0), -w, w)
    two = x.const(2)
    s = sqrt(x - 1)
    return select(x.ge(x.const("max") / two), log(two) + log(x), log1p(s * (sqrt(x + 1) + s)))


@chlo_unary("asinh")
def asinh(x: E) -> E:
    if x.dtype.is_complex:
        w = asin(complex_(-imag(x), real(x)))
        return complex_(imag(w), -real(w))
    ax = abs_(x)
    ax2 = ax * ax
    large = log(x.const(2)) + log(ax)
    small = log1p(ax + ax2 / (1 + sqrt(1 + ax2)))
    return sign(x) * select(ax.ge(sqrt(x.const("max"))), large, small)


@chlo_unary("asin")
def asin(x: E) -> E:
    if x.dtype.is_complex:
        parts = _asin_acos_parts(x)
        imag_part = select(parts["signed_y"].lt(0), -parts["imag"], parts["imag"])
        return complex_(parts["asin_real"], imag_part)
    return 2 * atan2(x, 1 + sqrt((1 - x) * (1 + x)))


@chlo_unary("acos")
def acos(x: E) -> E:
    if x.dtype.is_complex:
        parts = _asin_acos_parts(x)
        imag_part = select(parts["signed_y"].lt(0), parts["imag"], -parts["imag"])
        return complex_(parts["acos_real"], imag_part)
    one_plus_x = 1 + x
    return 2 * atan2(sqrt((1 - x) * one_plus_x), one_plus_x)


@chlo_unary("atanh")
def atanh(x: E) -> E:
    value = (log1p(x) - log1p(-x)) * 0.5
    if x.dtype.is_complex:
        return value
    return select(abs_(x).gt(1), x.const("nan"), value)


@chlo_unary("atan")
def atan(x: E) -> E:
    if x.dtype.is_complex:  # atan(z) = i/2 * (log1p(-iz) - log1p(iz))
        iz = complex_(-imag(x), real(x))
        d = log1p(-iz) - log1p(iz)
        return complex_(-imag(d) * 0.5, real(d) * 0.5)
    return atan2(x, x.const(1))


def _hypot_like(mx: E, mn: E) -> E:
    """hypot for mx >= mn >= 0, as the CHLO decomposition computes it."""
    sqrt_two = sqrt(mx.const(2))
    r = (mn / mx) * (mn / mx)
    sqa = sqrt(1 + r)
    careful = select(sqa.eq(1) & r.gt(0), mx + mx * r / 2, mx * sqa)
    return select(mx.eq(mn), sqrt_two * mx, careful)


def _asin_acos_parts(z: E) -> dict[str, E]:
    """Shared pieces of complex asin/acos (Hull et al., fewer regions), in z's component type."""
    signed_x, signed_y = real(z), imag(z)
    x, y = abs_(signed_x), abs_(signed_y)
    one, half = x.const(1), x.const(0.5)
    safe_max = sqrt(x.const("max")) / 8
    xp1, xm1 = x + one, x - one
    abs_xp1, abs_xm1 = abs_(xp1), abs_(xm1)
    r = _hypot_like(maximum(abs_xp1, y), minimum(abs_xp1, y))
    s = _hypot_like(maximum(abs_xm1, y), minimum(abs_xm1, y))
    a = half * (r + s)
    half_apx = half * (a + x)
    yy = y * y
    rpxp1, smxm1, spxm1 = r + xp1, s - xm1, s + xm1
    q = select(
        maximum(x, y).ge(safe_max),
        y,
        select(
            x.le(one),
            sqrt(half_apx * (yy / rpxp1 + smxm1)),
            y * sqrt(half_apx / rpxp1 + half_apx / spxm1),
        ),
    )
    safe_max_opt = select(x.lt(safe_max * 1e12), safe_max * 1e-6, safe_max * 100.0)
    y_big = y.ge(safe_max_opt)
    mx = select(y_big, y, x)
    xoy = select(y_big & ~y.eq(x.const("inf")), x / y, x.const(0))
    tiny_y = y.lt(sqrt(x.const("tiny")) * 4) & x.lt(one)
    ap1 = a + one
    half_yy = half * yy
    d = half_yy / rpxp1
    am1 = select(
        tiny_y,
        -(xp1 * xm1) / ap1,
        select(x.ge(one), d + half * spxm1, select(a.le(1.5), d + half_yy / smxm1, a - one)),
    )
    sq = sqrt(am1 * ap1)
    imag_part = select(
        mx.ge(select(y_big, safe_max_opt, safe_max)),
        log(x.const(2)) + log(mx) + half * log1p(xoy * xoy),
        select(tiny_y, y / sq, log1p(am1 + sq)),
    )
    return {
        "signed_y": signed_y,
        "imag": imag_part,
        "asin_real": atan2(signed_x, q),
        "acos_real": atan2(q, signed_x),
    }


# -- hyperbolic and circular functions ----------------------------------------------------------


def _sinh_large(x: E) -> E:
    half_log = log(x.const(0.5))
    return exp(x + half_log) - exp(half_log - x)


@chlo_unary("sinh")
def sinh(x: E) -> E:
    if x.dtype.is_complex:
        return _sinh_large(x)

    def f(v: E) -> E:
        m = expm1(v)
        small = 0.5 * (m + m / (m + 1))
        return select(abs_(v).lt(1), small, _sinh_large(v))

    return with_upcast(x, f)


@chlo_unary("cosh")
def cosh(x: E) -> E:
    def f(v: E) -> E:
        half_log = log(v.const(0.5))
        return exp(v + half_log) + exp(half_log - v)

    return with_upcast(x, f) if not x.dtype.is_complex else f(x)


@chlo_unary("tan")
def tan(x: E) -> E:
    if x.dtype.is_complex:
        t = tan(real(x))
        th = tanh(imag(x))
        return complex_(t, th) / complex_(t.const(1), -(t * th))
    return sin(x) / cos(x)


@chlo_unary("square")
def square(x: E) -> E:
    return x * x


@chlo_unary("conj")
def conj(x: E) -> E:
    return complex_(real(x), -imag(x))


@chlo_unary("is_inf")
def is_inf(x: E) -> E:
    return abs_(x).eq(x.const("inf"))


@chlo_unary("is_pos_inf")
def is_pos_inf(x: E) -> E:
    return x.eq(x.const("inf"))


@chlo_unary("is_neg_inf")
def is_neg_inf(x: E) -> E:
    return x.eq(x.const("-inf"))


@converter("chlo.next_after")
def _next_after(cx: OpContext):
    x, y = E(cx.b, cx.operand(0)), E(cx.b, cx.operand(1))
    bits = x.dtype.bits
    int_type = {8: "s8", 16: "s16", 32: "s32", 64: "s64"}[bits]
    xi, yi = x.bitcast(int_type), y.bitcast(int_type)
    sign_bit = -(1 << (bits - 1))
    x_abs, y_abs = xi & ~xi.const(sign_bit), yi & ~yi.const(sign_bit)
    x_sign, y_sign = xi & sign_bit, yi & sign_bit
    smaller = x_abs.gt(y_abs) | x_sign.ne(y_sign)
    result = xi + select(smaller, xi.const(-1), 1)
    result = select(x_abs.eq(0), select(y_abs.eq(0), yi, y_sign | 1), result)
    result = select(x.eq(y), yi, result)
    result = select(x.ne(x) | y.ne(y), x.const("nan").bitcast(int_type), result)
    return [result.bitcast(x.dtype).i]
