"""Complex abs, sign, transcendentals, power and atan2 in the elemental emitter (no fallback).

Where the target's math policy has ``f32_via_f64`` (the CPU), c64 and c128 are both computed in
f64 (c64 parts widened, each result part rounded once to f32), exactly the way the interpreter
evaluates them: in c128 through NumPy, then rounded. Elsewhere (the GPU targets, where f64 is
slow) c64 is computed in f32 from the same formulas: the ``Kit`` of functions the ops are made
of is ``F32_KIT`` (complex_math_f32.py) instead of ``F64_KIT``, with range guards where f32's
exponent range is narrower than the interpreter's f64 (see "f32 parts" below). The C99
functions (exp, log, sqrt, sin, cos, tan, tanh) are complex_math.py's; the ops the interpreter
writes as NumPy expressions repeat those expressions step for step, with NumPy's own complex
division (Smith's, ``scl = 1 / denominator``) and products (the ufunc's fused ``fma(a, c, -bd)``,
``fma(a, d, bc)``; npymath's and glibc's plain ``ac - bd``), so their edge cases (inf * 0, 1 / 0)
come out as the interpreter's:

  abs        NumPy's max * sqrt(fma(r, r, 1)); c64 keeps complex_values' exact f64 form
             (f32 parts: complex_math_f32's scaled two-float hypot)
  sign       z / |z| (NumPy's division by |z| + 0i), 0 at 0
  expm1      (expm1(x) cos y - 2 sin^2(y/2)) + i e^x sin y            (NumPy's nc_expm1)
  log1p      log(hypot(x + 1, y)) + i atan2(y, x + 1)                  (NumPy's nc_log1p)
  rsqrt      1 / sqrt(z);  logistic 1 / (1 + exp(-z))
  cbrt       cbrt(|z|) * exp(i arg(z) / 3), 0 at 0
  atan2      -i log((x + iy) / sqrt(x^2 + y^2)) for complex x, y
  power      npymath's npy_cpow: a^0 = 1, 0^b, integer b in (-100, 100) by repeated
             multiplication (then 1 / r for b < 0), else glibc's cexp(b clog(a)) with its
             __muldc3 product; then the interpreter's 1^b = 1, inf^(real b) overrides

Accuracy against the interpreter (plugins/cpu/tests/test_complex_math.py: every pair of special
parts and 60,000 random values of moderate, wide and full-range magnitudes per op and type),
as "bound the test holds (largest seen)":

* c64: 1 ulp per part for every op, 2 units of the composite bounds below (0: bit for bit).
* c128, ulp of the interpreter's part: exp 4 (3), log 4 (2), sqrt 4 (2), sin and cos 6 (3),
  tan and tanh 10 (7), rsqrt and cbrt 8 (4), abs and sign 1 (0). Both sides err: against
  mpmath ours are within 1.4, 0.6, 1.7, 1.9, 3.9, 4.2 and 2.7 ulp, glibc's 1.8, 1.8, 1.7, 2.4,
  4.5, 4.2 and 2.7 (exp, log, sqrt, sin/cos, tan/tanh, rsqrt, cbrt).
* c128 composites, where NumPy's formula cancels or the result is ill-conditioned, with eps =
  2^-52, each part: expm1 Re within 4 eps (|expm1(x) cos y| + 2 sin^2(y/2)), Im 4 ulp (3);
  log1p Re within 4 (ulp + eps) (the log of a rounded hypot near 1), Im 4 ulp (1); logistic
  within 8 eps |r| (1 + |w| / |1 + w|), w = e^-z (0.84); power within 8 eps |r| (1 + |b log a|)
  (1.6), results of |b log a| > 2^40 not compared (no rounding of log a determines them);
  atan2 within 8 eps (1 + |r|) (|x|^2 + |y|^2) / |x^2 + y^2| (0.74).

Infinite and NaN parts, and the sign of a zero part both sides give, are the interpreter's
exactly (NaN payloads aside).

f32 parts (plugins/cpu/tests/test_complex_math_f32.py, the same inputs, bounds with f32's eps
2^-23, "bound (largest seen)"): exp 4 (2), log 2 (1), sqrt 4 (2), sin and cos 4 (3), tan and
tanh 8 (5), rsqrt 8 (6), cbrt 8 (4), abs 1 (0), sign 1 (1) ulp; the composites within the c128
bounds above with f32's eps (largest seen, in units of the bound's formula: expm1 2, log1p 2,
logistic 1.7, power 4, atan2 1.8). The range guards: sign from the scaled parts; cbrt|z| and
the angle y / 3x of tiny angles without underflow; expm1 and logistic where the interpreter's
f64 e^x or e^-z stays finite (or overflows) and f32's would not; NumPy's division with the
numerator and denominator scaled by powers of two; __muldc3's finite products kept as
+-FLT_MAX where they overflow f32; integral b other than 1, 2, 3 and -1 by exp/log (repeated
f32 squaring doubles its error each step); atan2's operands scaled only beyond 2^+-60 and the
sign of Im(x^2 + y^2) kept below f32's range. Signed zeros are the interpreter's where signed-
zero arithmetic defines them (an input part zero or not finite); a zero that is a rounded
cancellation or underflow may differ in sign, and atan2 inputs whose parts span > 2^100 (a part
below f32's range next to the largest) may take the other branch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm import complex_math as cm
from hlort.codegen.llvm import complex_math_f32 as cm32
from hlort.codegen.llvm import float_math as fm
from hlort.codegen.llvm import float_math_f32 as m32
from hlort.codegen.llvm import float_math_f64 as f64
from hlort.codegen.llvm import float_parts as fp
from hlort.codegen.llvm.complex_math import INF, NAN, Pair, is_inf, is_zero, like, select_pair
from hlort.codegen.llvm.complex_types import make, parts
from hlort.codegen.llvm.double_double import const
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, F64, I64
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

ONE: tuple[float, float] = (1.0, 0.0)


# -- NumPy's complex arithmetic -------------------------------------------------------------------
def _c(pair: tuple[float, float], like_value: ir.Value | None = None) -> Pair:
    """A complex constant with parts of ``like_value``'s type (f64 when None)."""
    if like_value is None:
        return const(pair[0]), const(pair[1])
    return like(like_value, pair[0]), like(like_value, pair[1])


def numpy_divide(ctx: IrContext, a: Pair, d: Pair) -> Pair:
    """NumPy's complex division loop (Smith's algorithm with a reciprocal scale)."""
    b = ctx.b
    (ar, ai), (br, bi) = a, d
    abs_r, abs_i = ctx.fabs(br), ctx.fabs(bi)
    real_larger = b.fcmp_ordered(">=", abs_r, abs_i)
    zero = b.and_(is_zero(ctx, abs_r), is_zero(ctx, abs_i))
    rat1 = b.fdiv(bi, br)
    scl1 = b.fdiv(like(br, 1.0), b.fadd(br, b.fmul(bi, rat1)))
    r1 = (b.fmul(b.fadd(ar, b.fmul(ai, rat1)), scl1), b.fmul(b.fsub(ai, b.fmul(ar, rat1)), scl1))
    rat2 = b.fdiv(br, bi)
    scl2 = b.fdiv(like(br, 1.0), b.fadd(bi, b.fmul(br, rat2)))
    r2 = (b.fmul(b.fadd(b.fmul(ar, rat2), ai), scl2), b.fmul(b.fsub(b.fmul(ai, rat2), ar), scl2))
    by_zero = (b.fdiv(ar, abs_r), b.fdiv(ai, abs_r))
    return select_pair(ctx, real_larger, select_pair(ctx, zero, by_zero, r1), r2)


def numpy_divide_scaled(ctx: IrContext, a: Pair, d: Pair) -> Pair:
    """numpy_divide with a and d each scaled by a power of two into [1, 2) and the quotient
    scaled back (f32 parts: 1 / (d_r + d_i r) and the products neither overflow nor underflow
    where f64's would not)."""
    b = ctx.b
    e = cm32.pow2_exponent(ctx, cm32.common_max(ctx, list(d)))
    ea = cm32.pow2_exponent(ctx, cm32.common_max(ctx, list(a)))
    ds = cm32.scale_by(ctx, d[0], b.neg(e)), cm32.scale_by(ctx, d[1], b.neg(e))
    as_ = cm32.scale_by(ctx, a[0], b.neg(ea)), cm32.scale_by(ctx, a[1], b.neg(ea))
    q = numpy_divide(ctx, as_, ds)
    shift = b.sub(ea, e)
    return cm32.scale_by(ctx, q[0], shift), cm32.scale_by(ctx, q[1], shift)


def plain_multiply(ctx: IrContext, x: Pair, y: Pair, wide: bool = False) -> Pair:
    """(ac - bd) + (ad + bc)i with every product rounded (npymath's cmul, glibc's C code).
    ``wide`` (f32 parts): where a product of finite parts overflows f32 and the other term is
    a true infinity, the sum is that infinity (the interpreter's f64 product is finite), not
    inf - inf = NaN."""
    b = ctx.b
    (xr, xi), (yr, yi) = x, y
    if not wide:
        return (b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)), b.fadd(b.fmul(xr, yi), b.fmul(xi, yr)))
    return (
        _wide_sum(ctx, (xr, yr), (xi, yi), subtract=True),
        _wide_sum(ctx, (xr, yi), (xi, yr), subtract=False),
    )


def _wide_sum(ctx: IrContext, p: Pair, q: Pair, subtract: bool) -> ir.Value:
    """p0 p1 -+ q0 q1 with a finite-operand product that overflowed losing to a true infinity."""
    b = ctx.b

    def term(u, v):
        r = b.fmul(u, v)
        finite = b.and_(cm.is_finite(ctx, u), cm.is_finite(ctx, v))
        return r, b.and_(is_inf(ctx, r), finite), b.and_(is_inf(ctx, r), b.not_(finite))

    (r1, over1, inf1), (r2, over2, inf2) = term(*p), term(*q)
    r2 = b.fneg(r2) if subtract else r2
    s = b.fadd(r1, r2)
    s = b.select(b.and_(over1, inf2), r2, s)
    return b.select(b.and_(inf1, over2), r1, s)


def fused_multiply(ctx: IrContext, x: Pair, y: Pair) -> Pair:
    """NumPy's ufunc product (simd_cmul): fma(a, c, -(b d)) + fma(a, d, b c) i."""
    b = ctx.b
    (xr, xi), (yr, yi) = x, y
    return (ctx.fma(xr, yr, b.fneg(b.fmul(xi, yi))), ctx.fma(xr, yi, b.fmul(xi, yr)))


def _muldc3(ctx: IrContext, x: Pair, y: Pair, wide: bool = False) -> Pair:
    """C's complex product (libgcc's __muldc3): the plain product, with infinities recovered
    when it comes out NaN + NaN i. ``wide`` (f32 parts): plain_multiply's wide sums, and the
    recovery of overflowed products never runs (the interpreter's f64 products of f32-range
    values never overflow)."""
    b = ctx.b

    def product(u, v):
        return plain_multiply(ctx, u, v, wide)

    (a0, b0), (c0, d0) = x, y
    re, im = product(x, y)
    both_nan = b.and_(ctx.is_nan(re), ctx.is_nan(im))

    def box(v):
        return ctx.copysign(b.select(is_inf(ctx, v), like(v, 1.0), like(v, 0.0)), v)

    def denan(v):
        return b.select(ctx.is_nan(v), ctx.copysign(like(v, 0.0), v), v)

    x_inf = b.or_(is_inf(ctx, a0), is_inf(ctx, b0))
    y_inf = b.or_(is_inf(ctx, c0), is_inf(ctx, d0))
    a1, b1 = b.select(x_inf, box(a0), a0), b.select(x_inf, box(b0), b0)
    c1, d1 = b.select(x_inf, denan(c0), c0), b.select(x_inf, denan(d0), d0)
    c2, d2 = b.select(y_inf, box(c1), c1), b.select(y_inf, box(d1), d1)
    a2, b2 = b.select(y_inf, denan(a1), a1), b.select(y_inf, denan(b1), b1)
    products = (b.fmul(a0, c0), b.fmul(b0, d0), b.fmul(a0, d0), b.fmul(b0, c0))
    overflowed = b.or_(
        b.or_(is_inf(ctx, products[0]), is_inf(ctx, products[1])),
        b.or_(is_inf(ctx, products[2]), is_inf(ctx, products[3])),
    )
    if wide:  # products of f32-range values never overflow the interpreter's f64
        overflowed = ir.Constant(ir.IntType(1), 0)
    recalc_inf = b.or_(x_inf, y_inf)
    by_overflow = b.and_(b.not_(recalc_inf), overflowed)
    a3, b3, c3, d3 = (b.select(by_overflow, denan(v), v) for v in (a2, b2, c2, d2))
    fixed = product((a3, b3), (c3, d3))
    fixed = (b.fmul(like(re, INF), fixed[0]), b.fmul(like(re, INF), fixed[1]))
    return select_pair(ctx, b.and_(both_nan, b.or_(recalc_inf, overflowed)), fixed, (re, im))


# -- the functions the ops are made of, per part type ---------------------------------------------
@dataclass(frozen=True)
class Kit:
    """The complex and real functions the ops below are built from, in one part type: f64
    (complex_math.py; c128, and c64 widened where ``MathPolicy.f32_via_f64``) or f32
    (complex_math_f32.py; c64 on targets without fast f64)."""

    unary: dict  # exp, log, sqrt, sin, cos, tan, tanh, expm1, log1p (+ own forms): (ctx, z)
    cabs: Callable  # (ctx, x, y) -> |z|
    atan2: Callable  # (ctx, y, x)
    cbrt_abs: Callable  # (ctx, x, y) -> cbrt|z|
    divide: Callable  # NumPy's division (ctx, a, d) -> Pair
    f32: bool  # f32 parts: the range-guarded variants below


def _expm1(ctx: IrContext, z: Pair) -> Pair:
    b = ctx.b
    x, y = z
    a = f64.sin_f64(ctx, b.fmul(y, const(0.5)))
    sin_y, cos_y = cm.sin_cos(ctx, y)
    re = b.fsub(b.fmul(fm.expm1(ctx, x), cos_y), b.fmul(b.fmul(const(2.0), a), a))
    return re, b.fmul(fm.exp_f64(ctx, x), sin_y)


_F64_EXP_OVERFLOW = 709.782712893384  # the interpreter's e^x (f64) is inf beyond


def _expm1_f32(ctx: IrContext, z: Pair) -> Pair:
    """NumPy's formula with e^x sin y (and, past x = 80, e^x cos y) rounded once from
    complex_math_f32's split e^x, so they stay finite where e^x alone overflows f32 (and
    inf * sin y, NaN at y = 0, where the interpreter's f64 e^x overflows)."""
    b = ctx.b
    x, y = z
    k = lambda v: cm.like(x, v)  # noqa: E731
    a = m32.sin_f32(ctx, b.fmul(y, k(0.5)))
    sin_y, cos_y = cm32.sin_cos(ctx, y)
    finite = cm.is_finite(ctx, x)
    e = cm32.exp_split(ctx, cm.finite_or_zero(ctx, x))
    big = b.and_(finite, b.fcmp_ordered(">", x, k(80.0)))
    scaled = b.select(big, cm32.times_exp(ctx, cos_y, e), b.fmul(m32.expm1_f32(ctx, x), cos_y))
    re = b.fsub(scaled, b.fmul(b.fmul(k(2.0), a), a))
    e_special = b.select(b.fcmp_ordered("==", x, k(-INF)), k(0.0), x)  # e^x of inf, -inf, NaN
    e_special = b.select(finite, k(INF), e_special)  # finite x past f64's e^x overflow
    plain = b.not_(b.and_(finite, b.fcmp_ordered("<", x, k(_F64_EXP_OVERFLOW))))
    im = b.select(plain, b.fmul(e_special, sin_y), cm32.times_exp(ctx, sin_y, e))
    return re, im


def _log_real(ctx: IrContext, h: ir.Value) -> ir.Value:
    """log(h) for h >= 0 or NaN, through the double-double log (nearly correctly rounded)."""
    b = ctx.b
    regular = b.and_(b.fcmp_ordered(">", h, const(0.0)), b.fcmp_ordered("<", h, const(INF)))
    hi, lo = f64._log_dd(ctx, b.select(regular, h, const(1.0)))
    return fp.log_specials(ctx, h, b.fadd(hi, lo))


def _hypot(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """C's hypot, nearly correctly rounded (an infinite part wins over NaN)."""
    b = ctx.b
    safe = b.and_(cm.is_finite(ctx, x), cm.is_finite(ctx, y))
    xs, ys, k = cm.scaled_parts(ctx, b.select(safe, x, const(1.0)), b.select(safe, y, const(0.0)))
    h = cm._sqrt_dd(ctx, cm.sum_of_squares(ctx, xs, ys))
    h = b.select(b.and_(is_zero(ctx, xs), is_zero(ctx, ys)), const(0.0), h)
    half = cm.pow2_half(ctx, k)
    h = b.fmul(b.fmul(h, half), half)
    h = b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), const(NAN), h)
    return b.select(b.or_(is_inf(ctx, x), is_inf(ctx, y)), const(INF), h)


def _log1p(ctx: IrContext, z: Pair) -> Pair:
    x1 = ctx.b.fadd(z[0], const(1.0))
    return _log_real(ctx, _hypot(ctx, x1, z[1])), f64.atan2_f64(ctx, z[1], x1)


def _log1p_f32(ctx: IrContext, z: Pair) -> Pair:
    """log|x + 1 + iy| from the two-float sum of squares (no rounded hypot) + i atan2."""
    x1 = ctx.b.fadd(z[0], cm.like(z[0], 1.0))
    return cm.log_with(ctx, (x1, z[1]), cm32.log_abs, m32.atan2_f32)


F64_KIT = Kit(
    unary={
        Opcode.EXP: cm.cexp,
        Opcode.LOG: cm.clog,
        Opcode.SQRT: cm.csqrt,
        Opcode.SINE: cm.csin,
        Opcode.COSINE: cm.ccos,
        Opcode.TAN: cm.ctan,
        Opcode.TANH: cm.ctanh,
        Opcode.EXPM1: _expm1,
        Opcode.LOG1P: _log1p,
    },
    cabs=cm.numpy_abs,
    atan2=f64.atan2_f64,
    cbrt_abs=lambda ctx, x, y: f64.cbrt_f64(ctx, cm.numpy_abs(ctx, x, y)),
    divide=lambda ctx, a, d: numpy_divide(ctx, a, d),
    f32=False,
)
F32_KIT = Kit(
    unary={
        Opcode.EXP: cm32.cexp,
        Opcode.LOG: cm32.clog,
        Opcode.SQRT: cm32.csqrt,
        Opcode.SINE: cm32.csin,
        Opcode.COSINE: cm32.ccos,
        Opcode.TAN: cm32.ctan,
        Opcode.TANH: cm32.ctanh,
        Opcode.EXPM1: _expm1_f32,
        Opcode.LOG1P: _log1p_f32,
        Opcode.SIGN: cm32.csign,
    },
    cabs=cm32.cabs,
    atan2=m32.atan2_f32,
    cbrt_abs=cm32.cbrt_abs,
    divide=lambda ctx, a, d: numpy_divide_scaled(ctx, a, d),
    f32=True,
)


# -- ops written as NumPy expressions -------------------------------------------------------------
def _sign(ctx: IrContext, kit: Kit, z: Pair) -> Pair:
    mag = kit.cabs(ctx, *z)
    q = numpy_divide(ctx, z, (mag, cm.like(mag, 0.0)))
    return select_pair(ctx, is_zero(ctx, mag), _c((0.0, 0.0), mag), q)


def _rsqrt(ctx: IrContext, kit: Kit, z: Pair) -> Pair:
    return kit.divide(ctx, _c(ONE, z[0]), kit.unary[Opcode.SQRT](ctx, z))


def _logistic(ctx: IrContext, kit: Kit, z: Pair) -> Pair:
    """1 / (1 + e^-z); in f32, for finite z with -709 < Re z < 0 (e^-z may overflow f32,
    not the interpreter's f64), u / (1 + u) with u = e^z instead."""
    b = ctx.b
    one = cm.like(z[0], 1.0)
    exp = kit.unary[Opcode.EXP]
    er, ei = exp(ctx, (b.fneg(z[0]), b.fneg(z[1])))
    r = kit.divide(ctx, _c(ONE, z[0]), (b.fadd(one, er), b.fadd(cm.like(one, 0.0), ei)))
    if not kit.f32:
        return r
    x, y = z
    ur, ui = exp(ctx, z)
    u_form = kit.divide(ctx, (ur, ui), (b.fadd(one, ur), b.fadd(cm.like(one, 0.0), ui)))
    y_finite = cm.is_finite(ctx, y)
    use = b.and_(b.and_(y_finite, b.not_(is_zero(ctx, y))), b.fcmp_ordered("<", x, _zero(x)))
    far = b.fcmp_ordered("<=", x, cm.like(x, -_F64_EXP_OVERFLOW))
    r = select_pair(ctx, b.and_(use, b.not_(far)), u_form, r)
    # Re z <= -709.78: the interpreter's e^-z has an infinite real part and an imaginary part
    # e^|x| sin(-y) that overflows f64 where log|sin y| > 709.78 + x: then 1 / (1 + w) is
    # NaN, else a zero pair with the sign of cos y
    sin_y, cos_y = cm32.sin_cos(ctx, y)
    log_sin = fm.log_f32(ctx, ctx.fabs(sin_y))
    overflows = b.fcmp_ordered(">", log_sin, b.fadd(x, cm.like(x, _F64_EXP_OVERFLOW)))
    zero = ctx.copysign(_zero(x), cos_y)
    far_value = select_pair(ctx, overflows, _c((NAN, NAN), x), (zero, zero))
    return select_pair(ctx, b.and_(far, y_finite), far_value, r)


def _cbrt(ctx: IrContext, kit: Kit, z: Pair) -> Pair:
    b = ctx.b
    x, y = z
    root = kit.cbrt_abs(ctx, x, y)
    angle = b.fdiv(kit.atan2(ctx, y, x), cm.like(x, 3.0))
    turn = kit.unary[Opcode.EXP](ctx, fused_multiply(ctx, _c((0.0, 1.0), x), (angle, _zero(x))))
    value = fused_multiply(ctx, (root, _zero(x)), turn)
    if kit.f32:  # |y| < 2^-60 x: Im = root sin(angle) = root y / 3x, angle may underflow f32
        tiny = b.and_(
            b.fcmp_ordered(">", x, _zero(x)),
            b.fcmp_ordered("<", ctx.fabs(y), b.fmul(x, cm.like(x, 2.0**-60))),
        )
        tiny = b.and_(tiny, b.not_(is_zero(ctx, y)))
        tiny_im = b.fdiv(b.fmul(b.fdiv(root, x), y), cm.like(x, 3.0))
        value = (value[0], b.select(tiny, tiny_im, value[1]))
    both_zero = b.and_(is_zero(ctx, x), is_zero(ctx, y))
    return select_pair(ctx, both_zero, _c((0.0, 0.0), x), value)


def _zero(x: ir.Value) -> ir.Value:
    return cm.like(x, 0.0)


def _atan2(ctx: IrContext, kit: Kit, y: Pair, x: Pair) -> Pair:
    """-i log((x + iy) / sqrt(x^2 + y^2)); in f32 with x and y scaled by one power of two
    where their largest part is beyond 2^+-60 (the value does not change) so the squares
    neither over- nor underflow, and Im(x^2 + y^2) = 2 (x_r x_i + y_r y_i) formed so that a
    sum below f32's range still has its sign."""
    b = ctx.b
    if kit.f32:
        s1, s2 = cm32.common_scale(ctx, [*x, *y])
        x = tuple(b.fmul(b.fmul(v, s1), s2) for v in x)
        y = tuple(b.fmul(b.fmul(v, s1), s2) for v in y)
    xx, yy = fused_multiply(ctx, x, x), fused_multiply(ctx, y, y)
    s = (b.fadd(xx[0], yy[0]), b.fadd(xx[1], yy[1]))
    if kit.f32:  # Im(x^2 + y^2) picks sqrt's branch: its sign survives f32 underflow
        s = (s[0], b.fmul(cm32.sum_of_products(ctx, x[0], x[1], y[0], y[1]), cm.like(s[1], 2.0)))
    root = kit.unary[Opcode.SQRT](ctx, s)
    iy = fused_multiply(ctx, _c((0.0, 1.0), x[0]), y)
    q = kit.divide(ctx, (b.fadd(x[0], iy[0]), b.fadd(x[1], iy[1])), root)
    return fused_multiply(ctx, _c((-0.0, -1.0), x[0]), kit.unary[Opcode.LOG](ctx, q))


_INT_POWER_BITS = 7  # |b| < 100 < 2^7


def _power(ctx: IrContext, kit: Kit, a: Pair, e: Pair) -> Pair:
    """npy_cpow. Where the kit says so (f32), integral b other than 1, 2, 3 and -1 takes the
    exp/log form for a finite base: f32 repeated squaring doubles its error each step."""
    b = ctx.b
    (ar, ai), (br, bi) = a, e
    k = lambda v: cm.like(ar, v)  # noqa: E731
    product = _muldc3(ctx, e, kit.unary[Opcode.LOG](ctx, a), wide=kit.f32)
    general = kit.unary[Opcode.EXP](ctx, product)
    is_int = b.and_(
        b.and_(is_zero(ctx, bi), b.fcmp_ordered(">", br, k(-100.0))),
        b.fcmp_ordered("<", br, k(100.0)),
    )
    is_int = b.and_(is_int, b.fcmp_ordered("==", ctx.intrinsic("trunc", br), br))
    n = b.fptosi(b.select(is_int, br, k(0.0)), I64)
    negative = b.icmp_signed("<", n, ir.Constant(I64, 0))
    m = b.select(negative, b.neg(n), n)
    acc, p = _c(ONE, ar), a
    for bit_index in range(_INT_POWER_BITS):
        if bit_index:
            p = plain_multiply(ctx, p, p, kit.f32)
        bit = b.trunc(b.lshr(m, ir.Constant(I64, bit_index)), ir.IntType(1))
        acc = select_pair(ctx, bit, plain_multiply(ctx, acc, p, kit.f32), acc)
    looped = select_pair(ctx, negative, kit.divide(ctx, _c(ONE, ar), acc), acc)
    square = plain_multiply(ctx, a, a, kit.f32)
    cube = plain_multiply(ctx, a, square, kit.f32)

    def n_is(v):
        return b.icmp_signed("==", n, ir.Constant(I64, v))

    whole = select_pair(ctx, n_is(3), cube, looped)
    whole = select_pair(ctx, n_is(1), a, select_pair(ctx, n_is(2), square, whole))
    if kit.f32:
        few = b.or_(b.or_(n_is(1), n_is(2)), b.or_(n_is(3), n_is(-1)))
        finite_a = b.and_(cm.is_finite(ctx, ar), cm.is_finite(ctx, ai))
        is_int = b.and_(is_int, b.or_(few, b.not_(finite_a)))
    r = select_pair(ctx, is_int, whole, general)
    a_zero = b.and_(is_zero(ctx, ar), is_zero(ctx, ai))
    zero_base = select_pair(
        ctx, b.fcmp_ordered(">", br, k(0.0)), _c((0.0, 0.0), ar), _c((NAN, NAN), ar)
    )
    b_zero = b.and_(is_zero(ctx, br), is_zero(ctx, bi))
    pos_inf = b.and_(b.fcmp_ordered("==", ar, k(INF)), is_zero(ctx, ai))
    real_b = is_zero(ctx, bi)
    a_one = b.and_(b.fcmp_ordered("==", ar, k(1.0)), is_zero(ctx, ai))
    return cm.with_specials(
        ctx,
        r,
        [
            (b.or_(a_one, b_zero), _c(ONE, ar)),
            (b.and_(b.and_(pos_inf, real_b), b.fcmp_ordered(">", br, k(0.0))), a),
            (
                b.and_(b.and_(pos_inf, real_b), b.fcmp_ordered("<", br, k(0.0))),
                _c((0.0, 0.0), ar),
            ),
            (a_zero, zero_base),
        ],
    )


# -- dispatch -------------------------------------------------------------------------------------
_COMPOSITE_UNARY = {
    Opcode.SIGN: _sign,
    Opcode.RSQRT: _rsqrt,
    Opcode.LOGISTIC: _logistic,
    Opcode.CBRT: _cbrt,
}
_BINARY = {Opcode.POWER: _power, Opcode.ATAN2: _atan2}
OPCODES = frozenset(F64_KIT.unary) | frozenset(_COMPOSITE_UNARY) | frozenset(_BINARY) | {Opcode.ABS}


def can_emit_math(instr: Instruction) -> bool:
    """Whether ``instr`` is one of these ops on complex operands (every one of them compiles)."""
    return instr.opcode in OPCODES and instr.operands[0].shape.dtype.is_complex


def in_f32(ctx: IrContext, dtype) -> bool:
    """Whether c64 math is computed in f32 on this target (no fast f64: the GPU targets)."""
    return dtype is dtypes.C64 and not ctx.target.math.f32_via_f64


def emit_math(ctx: IrContext, instr: Instruction, values: list[ir.Value]) -> ir.Value:
    """The value of a complex abs, sign, transcendental, power or atan2 instruction."""
    b = ctx.b
    dtype = instr.operands[0].shape.dtype
    f32_parts = in_f32(ctx, dtype)
    narrow = dtype is dtypes.C64 and not f32_parts
    kit = F32_KIT if f32_parts else F64_KIT
    wide = [tuple(b.fpext(p, F64) if narrow else p for p in parts(b, v)) for v in values]
    op = instr.opcode
    if op is Opcode.ABS:
        r = kit.cabs(ctx, *wide[0])
        return b.fptrunc(r, F32) if narrow else r
    if op in kit.unary:
        re, im = kit.unary[op](ctx, wide[0])
    elif op in _COMPOSITE_UNARY:
        re, im = _COMPOSITE_UNARY[op](ctx, kit, wide[0])
    else:
        re, im = _BINARY[op](ctx, kit, *wide)
    if narrow:
        re, im = b.fptrunc(re, F32), b.fptrunc(im, F32)
    return make(b, re, im)


__all__ = [
    "can_emit_math",
    "emit_math",
    "in_f32",
    "numpy_divide",
    "plain_multiply",
    "fused_multiply",
    "OPCODES",
    "Kit",
    "F64_KIT",
    "F32_KIT",
]
