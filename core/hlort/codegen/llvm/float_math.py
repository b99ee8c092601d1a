"""Transcendental functions as straight-line LLVM IR: vectorizable, no libm call in a hot loop.

Like XLA's CPU backend we emit our own approximations, so the loop vectorizer can turn a fused
loop containing ``exp`` or ``tanh`` into SIMD code. Every function is branch-free (selects for
special cases; f64 pow is a call, see pow_f64.py) and handles NaN, +-inf, +-0 and subnormals as
C99 does. Accuracy is measured by plugins/cpu/tests/test_transcendental_ulp.py over sampled bit
patterns of the whole float range against the interpreter (NumPy f64, rounded):

  f32  exp, log ........................ Cephes-style polynomials in f32, <= 2 ulp
  f32  tanh, logistic .................. from the f32 exp/polynomials, <= 3 ulp
  f32  erf, sin, cos, tan, pow, expm1,
       log1p, cbrt, atan2, rsqrt ....... evaluated in f64 and rounded, <= 1 ulp (the CPU:
                                         MathPolicy.f32_via_f64=True)
  f32  the same, all in f32 ............ float_math_f32.py, float_log_f32.py (GPU targets:
                                         f32_via_f64=False; no f64 instruction): two-floats
                                         where bits would be lost, exact integer reduction by
                                         pi/2 (pi_reduction_f32.py); <= 1 ulp measured
                                         (test_transcendental_ulp_f32.py)
  f64  exp, log, expm1, log1p, erf,
       logistic ........................ own f64 polynomials, <= 4 ulp
  f64  pow ............................ pow_f64.py: table-driven log and exp in double-double,
                                         one outlined function with SIMD copies; < 0.51 ulp
                                         from the exact value, <= 1 ulp from NumPy's
  f64  tanh, sin, cos, tan, cbrt,
       atan2 ........................... float_math_f64.py (double-double where bits would be
                                         lost): < 0.85 ulp from the exact value (mpmath), so
                                         <= 1 ulp from NumPy's (tests allow 2); sin/cos/tan
                                         exact-reduced for every finite f64 (pi_reduction_f64)

On the f64 route sin/cos/tan reduce arguments exactly for every f32 (a Payne-Hanek-style split
of 2/pi into 27-bit pieces whose products with an f32 are exact in f64, summed with Neumaier
compensation); the f32 forms reduce in integers (pi_reduction_f32.py).
Polynomial coefficients are Taylor/atanh series (exact rationals) unless noted as Cephes'.
"""

from __future__ import annotations

import functools
import math

import llvmlite.ir as ir

from hlort.codegen.llvm.float_parts import (
    INF,
    LN2_HI,
    LN2_LO,
    NAN,
    clamp,
    exp_scale,
    keep_nan,
    log_specials,
    round_to_int,
    scale,
    split_mantissa,
)
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, F64, I32, I64

# -- exp and log ----------------------------------------------------------------------------------
_EXPF_P = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)  # Cephes expf


def exp_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """Inputs clamp to [-176, 89]. At -176, n = -254 splits into 2^-127 * 2^-127, and pow2 of
    -127 is +0.0 (exponent field 0): y * 0 * 0 = 0 with no subnormal product. (A clamp at -104
    made 2^-150 from two normal factors: the subnormal or underflowing products cost microcode
    assists on x86, an exp of all-underflowing inputs 1.8x the time; softmax's masked scores,
    ``finfo.min - max``, are such inputs.) Every x < -104 still gives 0. The clamp is two
    ordered selects (x86's max and min): NaN fails both compares' first and takes -176, so it
    needs no select of its own; keep_nan restores it."""
    b = ctx.b
    low, high = ctx.f(F32, -176.0), ctx.f(F32, 89.0)
    if ctx.target.math.lrint_instruction:
        # NaN passes both selects and every step: lrint(NaN) is some integer (x86: INT_MIN,
        # whose two factors are 1.0), any factor times NaN is NaN, so no keep_nan (two vector
        # operations) is needed; the result is x quieted (x itself only for a signaling NaN)
        xc = b.select(b.fcmp_ordered("<", x, low), low, x)
        xc = b.select(b.fcmp_ordered(">", xc, high), high, xc)
        y, k = _exp_f32_parts(ctx, xc)
        return exp_scale(ctx, y, k)
    xc = b.select(b.fcmp_ordered(">", x, low), x, low)
    xc = b.select(b.fcmp_ordered("<", xc, high), xc, high)
    y, k = _exp_f32_parts(ctx, xc)
    return keep_nan(ctx, x, exp_scale(ctx, y, k))


def exp_f32_nonpositive(ctx: IrContext, x: ir.Value) -> ir.Value:
    """exp_f32's bits for an x known to be <= 0 or NaN (softmax's ``x - max(x)``), in 17
    vector operations instead of 23: no clamp, and y * 2**k in three integer and float steps
    instead of eight. The polynomial's last step makes Y = y * 2**64 (``fma(q, 2**64, 2**64)``
    rounds exactly as ``q + 1`` does, scaled), the exponent field of Y gets k added (exact:
    for -151 <= k <= 0, Y 2**k is normal), and one product by 2**-64 rounds y 2**k once, as
    exp_f32's second scaling step does. Below -104 (every such x gives +0) Y is selected to +0
    before that product, so no product of this path underflows (no microcode assist: masked
    scores cost as little as others) and a k wrapped by a huge or infinite |x| never reaches a
    float operation. A NaN x keeps its bits through every step (x86's cvtps2dq makes k
    INT_MIN, k << 23 is 0) and comes out quieted, as from exp_f32 (without lrint_instruction
    keep_nan gives x, as there). Bit-identical to exp_f32 on every x <= 0 and NaN
    (plugins/cpu/tests/test_row_math.py checks all 2**31 such bit patterns)."""
    b = ctx.b
    k, n = round_to_int(ctx, b.fmul(x, ctx.f(F32, 1.44269504088896341)))
    r = ctx.fma(n, ctx.f(F32, -0.693359375), x)
    r = ctx.fma(n, ctx.f(F32, 2.12194440e-4), r)
    q = ctx.fma(ctx.horner(r, _EXPF_P), b.fmul(r, r), r)
    big = ctx.f(F32, 2.0**64)
    y_bits = b.bitcast(ctx.fma(q, big, big), I32)
    shifted = b.add(y_bits, b.shl(k, ir.Constant(I32, 23)))
    gone = b.fcmp_ordered("<", x, ctx.f(F32, -104.0))
    scaled = b.bitcast(b.select(gone, ir.Constant(I32, 0), shifted), F32)
    e = b.fmul(scaled, ctx.f(F32, 2.0**-64))
    if ctx.target.math.lrint_instruction:
        return e  # cvtps2dq of NaN is INT_MIN: the NaN's bits pass unchanged
    return keep_nan(ctx, x, e)  # fptosi of NaN is poison; exp_f32 returns x there too


def quotient_by_reciprocal(ctx: IrContext, a: ir.Value, s: ir.Value, r: ir.Value) -> ir.Value:
    """a / s correctly rounded from ``r`` = 1 / s (rounded): q = a r, then q + (a - q s) r
    with the residual exact in an fma (Markstein), three fma-unit operations instead of a
    division (on AVX-512 a vdivps is some 5 cycles a vector, these 1.5). The same bits as
    ``a / s`` only when nothing underflows: s < 2**100 (r normal), a = 0 or a >= 2**-100 and
    a / s >= 2**-100 (the residual exact). Callers check that for their operands
    (hlort_cpu.codegen.row_quotient: once per row); 10**9 random pairs in that range, with
    significands near 1 and all ones, gave the division's bits in every case."""
    b = ctx.b
    q = b.fmul(a, r)
    return ctx.fma(ctx.fma(b.fneg(q), s, a), r, q)


def _exp_f32_parts(ctx: IrContext, xc: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(y, k) with exp(xc) = y * 2**k, y in [1/2, 2), k an i32, for xc in [-176, 89]; for a NaN
    xc, y is NaN and k some integer (only when rounded by lrint: fptosi of NaN is poison).
    Callers that know their argument's range clamp (and scale) less than exp_f32 does."""
    b = ctx.b
    k, n = round_to_int(ctx, b.fmul(xc, ctx.f(F32, 1.44269504088896341)))
    r = ctx.fma(n, ctx.f(F32, -0.693359375), xc)
    r = ctx.fma(n, ctx.f(F32, 2.12194440e-4), r)
    p = ctx.horner(r, _EXPF_P)
    return b.fadd(ctx.fma(p, b.fmul(r, r), r), ctx.f(F32, 1.0)), k


_EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))


def exp_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    """Degree-13 Taylor polynomial on |r| <= ln2/2 (truncation < 1e-17 relative)."""
    b = ctx.b
    xc = clamp(ctx, x, -746.0, 710.0)
    n = ctx.intrinsic("roundeven", b.fmul(xc, ctx.f(F64, 1.4426950408889634)))
    r = ctx.fma(n, ctx.f(F64, -LN2_HI), xc)
    r = ctx.fma(n, ctx.f(F64, -LN2_LO), r)
    return keep_nan(ctx, x, scale(ctx, ctx.horner(r, _EXP_TAYLOR), n))


_LOGF_P = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)  # Cephes logf


def log_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    b = ctx.b
    m, e = split_mantissa(ctx, x)
    f = b.fsub(m, ctx.f(F32, 1.0))
    z = b.fmul(f, f)
    y = b.fmul(b.fmul(f, z), ctx.horner(f, _LOGF_P))
    y = ctx.fma(e, ctx.f(F32, -2.12194440e-4), y)
    y = ctx.fma(z, ctx.f(F32, -0.5), y)
    r = ctx.fma(e, ctx.f(F32, 0.693359375), b.fadd(f, y))
    return log_specials(ctx, x, r)


_ATANH_R = tuple(2.0 / (2 * k + 1) for k in range(11, 0, -1))  # 2/3, 2/5, ... (series of 2 atanh)


def log_f64(ctx: IrContext, x: ir.Value) -> ir.Value:
    """fdlibm's form log(1+f) = f - (f^2/2 - s (f^2/2 + R(s^2))), s = f / (2 + f)."""
    b = ctx.b
    m, e = split_mantissa(ctx, x)
    f = b.fsub(m, ctx.f(F64, 1.0))
    s = b.fdiv(f, b.fadd(f, ctx.f(F64, 2.0)))
    s2 = b.fmul(s, s)
    big_r = b.fmul(s2, ctx.horner(s2, _ATANH_R))
    hfsq = b.fmul(ctx.f(F64, 0.5), b.fmul(f, f))
    log_m = b.fsub(f, b.fsub(hfsq, b.fmul(s, b.fadd(hfsq, big_r))))
    r = ctx.fma(e, ctx.f(F64, LN2_HI), ctx.fma(e, ctx.f(F64, LN2_LO), log_m))
    return log_specials(ctx, x, r)


def exp_any(ctx: IrContext, x: ir.Value) -> ir.Value:
    return exp_f64(ctx, x) if isinstance(x.type, ir.DoubleType) else exp_f32(ctx, x)


def log_any(ctx: IrContext, x: ir.Value) -> ir.Value:
    return log_f64(ctx, x) if isinstance(x.type, ir.DoubleType) else log_f32(ctx, x)


def _in_f32(ctx: IrContext, x: ir.Value) -> bool:
    """Whether an f32 function takes its all-f32 form (float_math_f32.py, float_log_f32.py):
    the target's math policy says f64 is not worth it (MathPolicy.f32_via_f64=False)."""
    return isinstance(x.type, ir.FloatType) and not ctx.target.math.f32_via_f64


def _wide(ctx: IrContext, x: ir.Value) -> ir.Value:
    """An f32 operand promoted to f64 (f64 as is)."""
    return ctx.b.fpext(x, F64) if isinstance(x.type, ir.FloatType) else x


def _narrow(ctx: IrContext, x: ir.Value, t: ir.Type) -> ir.Value:
    return ctx.b.fptrunc(x, t) if isinstance(t, ir.FloatType) else x


_EXPM1_TAYLOR = tuple(1.0 / math.factorial(k + 1) for k in range(17, -1, -1))


def expm1(ctx: IrContext, x: ir.Value) -> ir.Value:
    """Taylor series x * sum x^k/(k+1)! for |x| < 1/2, exp(x) - 1 beyond; in f64."""
    from hlort.codegen.llvm import float_math_f32 as f32

    if _in_f32(ctx, x):
        return f32.expm1_f32(ctx, x)
    b = ctx.b
    xd = _wide(ctx, x)
    series = b.fmul(xd, ctx.horner(xd, _EXPM1_TAYLOR))
    big = b.fsub(exp_f64(ctx, xd), ctx.f(F64, 1.0))
    small = b.fcmp_ordered("<", ctx.fabs(xd), ctx.f(F64, 0.5))
    r = b.select(small, series, big)
    r = b.select(b.fcmp_ordered("==", xd, ctx.f(F64, 0.0)), xd, r)  # keeps -0
    return _narrow(ctx, keep_nan(ctx, xd, r), x.type)


def log1p(ctx: IrContext, x: ir.Value) -> ir.Value:
    """Goldberg's log(u) * x / (u - 1) with u = 1 + x, in f64 (exact 1 + x for f32 inputs)."""
    from hlort.codegen.llvm import float_log_f32 as log32

    if _in_f32(ctx, x):
        return log32.log1p_f32(ctx, x)
    b = ctx.b
    xd = _wide(ctx, x)
    u = b.fadd(xd, ctx.f(F64, 1.0))
    r = b.fmul(log_f64(ctx, u), b.fdiv(xd, b.fsub(u, ctx.f(F64, 1.0))))
    r = b.select(b.fcmp_ordered("==", u, ctx.f(F64, 1.0)), xd, r)
    r = b.select(b.fcmp_ordered("==", xd, ctx.f(F64, INF)), xd, r)
    r = b.select(b.fcmp_ordered("==", xd, ctx.f(F64, -1.0)), ctx.f(F64, -INF), r)
    r = b.select(b.fcmp_ordered("<", xd, ctx.f(F64, -1.0)), ctx.f(F64, NAN), r)
    return _narrow(ctx, keep_nan(ctx, xd, r), x.type)


# -- hyperbolic and logistic ---------------------------------------------------------------------
_TANHF_P = (
    -5.70498872745e-3,
    2.06390887954e-2,
    -5.37397155531e-2,
    1.33314422036e-1,
    -3.33332819422e-1,
)  # Cephes tanhf


def tanh_f32(ctx: IrContext, x: ir.Value) -> ir.Value:
    """tanh |x|, its sign copied from x (tanh(-0) = -0): Cephes' polynomial below 0.625, else
    1 - 2 / (e^2|x| + 1). |x| is clamped at 9.5 (tanh rounds to 1 from 9.01 on; NaN takes 9.5
    and is restored at the end), so e^2|x| <= e^19 needs no clamp of its own and one exact
    scaling by 2**n (n <= 28): the same bits as through exp_f32, in fewer vector operations (a
    JAX LSTM's gate fusion, two tanh and three exp per element, with exp_f32's clamp below:
    273 -> 250 instructions per vector iteration for AVX2, 236 -> 220 for AVX-512)."""
    b = ctx.b
    z = ctx.fabs(x)
    s = b.fmul(z, z)
    small = ctx.fma(b.fmul(z, s), ctx.horner(s, _TANHF_P), z)
    limit = ctx.f(F32, 9.5)
    zc = b.select(b.fcmp_ordered("<", z, limit), z, limit)
    y, k = _exp_f32_parts(ctx, b.fmul(ctx.f(F32, 2.0), zc))
    e = exp_scale(ctx, y, k, normal=True)
    large = b.fsub(ctx.f(F32, 1.0), b.fdiv(ctx.f(F32, 2.0), b.fadd(e, ctx.f(F32, 1.0))))
    r = b.select(b.fcmp_ordered("<", z, ctx.f(F32, 0.625)), small, large)
    return keep_nan(ctx, x, ctx.copysign(r, x))


def tanh(ctx: IrContext, x: ir.Value) -> ir.Value:
    from hlort.codegen.llvm import float_math_f64 as f64

    if isinstance(x.type, ir.DoubleType):
        return f64.tanh_f64(ctx, x)
    return tanh_f32(ctx, x)


def logistic(ctx: IrContext, x: ir.Value) -> ir.Value:
    """1 / (1 + e) for x >= 0 and e / (1 + e) below, e = exp(-|x|): never overflows."""
    b = ctx.b
    t = x.type
    a = b.fneg(ctx.fabs(x))
    if isinstance(t, ir.FloatType):  # a <= 0: only the low clamp (NaN takes it; restored below)
        low = ctx.f(F32, -176.0)
        y, k = _exp_f32_parts(ctx, b.select(b.fcmp_ordered(">", a, low), a, low))
        e = exp_scale(ctx, y, k)
    else:
        e = exp_any(ctx, a)
    num = b.select(b.fcmp_ordered(">=", x, ctx.f(t, 0.0)), ctx.f(t, 1.0), e)
    return keep_nan(ctx, x, b.fdiv(num, b.fadd(ctx.f(t, 1.0), e)))


# -- erf ------------------------------------------------------------------------------------------
def erf(ctx: IrContext, x: ir.Value) -> ir.Value:
    """Cephes' double rational approximations (coefficients shared with the interpreter)."""
    from hlort.codegen.llvm import float_math_f32 as f32
    from hlort.interpreter.ops import special_functions as sf

    if _in_f32(ctx, x):
        return f32.erf_f32(ctx, x)
    b = ctx.b
    xd = _wide(ctx, x)
    ax = ctx.fabs(xd)
    z = b.fmul(xd, xd)
    small = b.fdiv(b.fmul(xd, ctx.horner(z, sf._T)), ctx.horner(z, sf._U))
    mid = clamp(ctx, ax, 1.0, 8.0)
    m = b.fdiv(ctx.intrinsic("roundeven", b.fmul(mid, ctx.f(F64, 128.0))), ctx.f(F64, 128.0))
    ex2 = b.fmul(
        exp_f64(ctx, b.fneg(b.fmul(m, m))),
        exp_f64(ctx, b.fneg(b.fmul(b.fsub(mid, m), b.fadd(mid, m)))),
    )
    erfc = b.fdiv(b.fmul(ex2, ctx.horner(mid, sf._P)), ctx.horner(mid, sf._Q))
    one = ctx.f(F64, 1.0)
    large = ctx.copysign(
        b.select(b.fcmp_ordered(">=", ax, ctx.f(F64, 8.0)), one, b.fsub(one, erfc)), xd
    )
    r = b.select(b.fcmp_ordered("<", ax, one), small, large)
    return _narrow(ctx, keep_nan(ctx, xd, r), x.type)


# -- trigonometry ---------------------------------------------------------------------------------
@functools.cache
def _two_over_pi_chunks(count: int = 8, bits: int = 27) -> tuple[float, ...]:
    """2/pi split into ``count`` pieces of ``bits`` significant bits each (exact in f64); made
    on first use, not at import (fractions and decimal are not on a softmax's compile path)."""
    from fractions import Fraction

    scale = 400
    # pi to ~400 bits with Machin's formula in integers.
    one = 1 << (scale + 20)

    def arctan_inv(n: int) -> int:
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total

    pi_scaled = 4 * (4 * arctan_inv(5) - arctan_inv(239))
    two_over_pi = Fraction(2 * one, 1) / Fraction(pi_scaled, 1)
    chunks = []
    rest = two_over_pi
    exponent = 0  # 2/pi < 1: first chunk covers bits 2^-1 .. 2^-bits
    for _ in range(count):
        exponent += bits
        piece = Fraction(math.floor(rest * (1 << exponent)), 1 << exponent)
        chunks.append(float(piece))
        rest -= piece
    return tuple(chunks)


_SIN_TAYLOR = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(8, 0, -1))
_COS_TAYLOR = tuple((-1) ** k / math.factorial(2 * k) for k in range(8, 0, -1))


def _reduce_quarter_turns(ctx: IrContext, xd: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(q, a): x = (q + a/(pi/2)) * pi/2 with integer q (mod 4, as i32) and |a| <= pi/4.

    Each x * c_k is exact; reducing it mod 4 and splitting integer and fraction is exact too,
    so only the final compensated sum of the fractions rounds.
    """
    b = ctx.b
    quadrant = None
    s = comp = None
    for c in _two_over_pi_chunks():
        t = b.fmul(xd, ctx.f(F64, c))
        m = b.fsub(
            t, b.fmul(ctx.f(F64, 4.0), ctx.intrinsic("roundeven", b.fmul(t, ctx.f(F64, 0.25))))
        )
        i = ctx.intrinsic("roundeven", m)
        frac = b.fsub(m, i)
        quadrant = i if quadrant is None else b.fadd(quadrant, i)
        if s is None:
            s, comp = frac, ctx.f(F64, 0.0)
            continue
        total = b.fadd(s, frac)
        bigger = b.fcmp_ordered(">=", ctx.fabs(s), ctx.fabs(frac))
        err = b.select(bigger, b.fadd(b.fsub(s, total), frac), b.fadd(b.fsub(frac, total), s))
        comp = b.fadd(comp, err)
        s = total
    hi = ctx.intrinsic("roundeven", s)
    y = b.fadd(b.fsub(s, hi), comp)
    adjust = ctx.intrinsic("roundeven", y)  # the compensation may cross +-1/2
    y = b.fsub(y, adjust)
    q = b.fadd(b.fadd(quadrant, hi), adjust)
    q_int = b.and_(b.fptosi(b.select(ctx.is_nan(q), ctx.f(F64, 0.0), q), I64), ir.Constant(I64, 3))
    return q_int, b.fmul(y, ctx.f(F64, math.pi / 2))


def _sin_cos_kernels(ctx: IrContext, a: ir.Value) -> tuple[ir.Value, ir.Value]:
    """Taylor polynomials of sin and cos on |a| <= pi/4 (truncation < 1e-16)."""
    b = ctx.b
    a2 = b.fmul(a, a)
    s = ctx.fma(b.fmul(a, a2), ctx.horner(a2, _SIN_TAYLOR), a)
    c = ctx.fma(a2, ctx.horner(a2, _COS_TAYLOR), ctx.f(F64, 1.0))
    return s, c


def _trig(ctx: IrContext, x: ir.Value, which: str) -> ir.Value:
    b = ctx.b
    xd = _wide(ctx, x)
    q, a = _reduce_quarter_turns(ctx, xd)
    s, c = _sin_cos_kernels(ctx, a)
    odd = b.trunc(q, ir.IntType(1))
    upper = b.icmp_unsigned(">=", q, ir.Constant(I64, 2))
    if which == "sin":
        r = b.select(odd, c, s)
        r = b.select(upper, b.fneg(r), r)
        r = b.select(b.fcmp_ordered("==", xd, ctx.f(F64, 0.0)), xd, r)  # sin(-0) = -0
    elif which == "cos":
        r = b.select(odd, s, c)
        neg = b.or_(
            b.icmp_unsigned("==", q, ir.Constant(I64, 1)),
            b.icmp_unsigned("==", q, ir.Constant(I64, 2)),
        )
        r = b.select(neg, b.fneg(r), r)
    else:
        r = b.select(odd, b.fneg(b.fdiv(c, s)), b.fdiv(s, c))
        r = b.select(b.fcmp_ordered("==", xd, ctx.f(F64, 0.0)), xd, r)
    r = b.select(b.fcmp_ordered("==", ctx.fabs(xd), ctx.f(F64, INF)), ctx.f(F64, NAN), r)
    return _narrow(ctx, keep_nan(ctx, xd, r), x.type)


def sin(ctx: IrContext, x: ir.Value) -> ir.Value:
    from hlort.codegen.llvm import float_math_f32 as f32
    from hlort.codegen.llvm import float_math_f64 as f64

    if isinstance(x.type, ir.DoubleType):
        return f64.sin_f64(ctx, x)
    return f32.sin_f32(ctx, x) if _in_f32(ctx, x) else _trig(ctx, x, "sin")


def cos(ctx: IrContext, x: ir.Value) -> ir.Value:
    from hlort.codegen.llvm import float_math_f32 as f32
    from hlort.codegen.llvm import float_math_f64 as f64

    if isinstance(x.type, ir.DoubleType):
        return f64.cos_f64(ctx, x)
    return f32.cos_f32(ctx, x) if _in_f32(ctx, x) else _trig(ctx, x, "cos")


def tan(ctx: IrContext, x: ir.Value) -> ir.Value:
    from hlort.codegen.llvm import float_math_f32 as f32
    from hlort.codegen.llvm import float_math_f64 as f64

    if isinstance(x.type, ir.DoubleType):
        return f64.tan_f64(ctx, x)
    return f32.tan_f32(ctx, x) if _in_f32(ctx, x) else _trig(ctx, x, "tan")


_ATAN_SERIES = tuple((-1) ** k / (2 * k + 1) for k in range(14, 0, -1))


def _atan_01(ctx: IrContext, t: ir.Value) -> ir.Value:
    """atan(t) for t in [0, 1] (f64): reduce above tan(pi/8) with atan((t-1)/(t+1)) + pi/4."""
    b = ctx.b
    one = ctx.f(F64, 1.0)
    big = b.fcmp_ordered(">", t, ctx.f(F64, 0.41421356237309503))
    z = b.select(big, b.fdiv(b.fsub(t, one), b.fadd(t, one)), t)
    z2 = b.fmul(z, z)
    r = ctx.fma(b.fmul(z, z2), ctx.horner(z2, _ATAN_SERIES), z)
    return b.select(big, b.fadd(r, ctx.f(F64, math.pi / 4)), r)


def atan2(ctx: IrContext, y: ir.Value, x: ir.Value) -> ir.Value:
    from hlort.codegen.llvm import float_math_f32 as f32
    from hlort.codegen.llvm import float_math_f64 as f64

    if isinstance(x.type, ir.DoubleType):
        return f64.atan2_f64(ctx, y, x)
    if _in_f32(ctx, x):
        return f32.atan2_f32(ctx, y, x)
    b = ctx.b
    yd, xd = _wide(ctx, y), _wide(ctx, x)
    ax, ay = ctx.fabs(xd), ctx.fabs(yd)
    swap = b.fcmp_ordered(">", ay, ax)
    num = b.select(swap, ax, ay)
    den = b.select(swap, ay, ax)
    t = b.fdiv(num, den)
    both_zero = b.fcmp_ordered("==", den, ctx.f(F64, 0.0))
    both_inf = b.and_(
        b.fcmp_ordered("==", ax, ctx.f(F64, INF)), b.fcmp_ordered("==", ay, ctx.f(F64, INF))
    )
    t = b.select(both_zero, ctx.f(F64, 0.0), t)
    t = b.select(both_inf, ctx.f(F64, 1.0), t)
    a = _atan_01(ctx, t)
    a = b.select(swap, b.fsub(ctx.f(F64, math.pi / 2), a), a)
    negative_x = b.icmp_signed("<", b.bitcast(xd, I64), ir.Constant(I64, 0))
    a = b.select(negative_x, b.fsub(ctx.f(F64, math.pi), a), a)
    r = ctx.copysign(a, yd)
    r = b.select(b.or_(ctx.is_nan(xd), ctx.is_nan(yd)), ctx.f(F64, NAN), r)
    return _narrow(ctx, r, x.type)


# -- power and roots ------------------------------------------------------------------------------
def power(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """C99 pow: exp(y log|x|) in f64 with the sign and special cases of Annex F.

    f64 pow is a call of one function per module with SIMD copies (pow_f64.py): inlined, its
    double-double body made LLVM compile some fusions for minutes.
    """
    from hlort.codegen.llvm import float_log_f32 as log32
    from hlort.codegen.llvm import pow_f64 as pow64

    if isinstance(x.type, ir.DoubleType):
        return pow64.power_f64(ctx, x, y)
    if _in_f32(ctx, x):
        return log32.power_f32(ctx, x, y)
    b = ctx.b
    xd, yd = _wide(ctx, x), _wide(ctx, y)
    zero, one = ctx.f(F64, 0.0), ctx.f(F64, 1.0)
    ax = ctx.fabs(xd)
    r = exp_f64(ctx, b.fmul(yd, log_f64(ctx, ax)))
    is_int = b.fcmp_ordered("==", ctx.intrinsic("floor", yd), yd)
    half = b.fmul(yd, ctx.f(F64, 0.5))
    is_odd = b.and_(is_int, b.fcmp_ordered("!=", ctx.intrinsic("floor", half), half))
    x_neg = b.icmp_signed("<", b.bitcast(xd, I64), ir.Constant(I64, 0))
    r = b.select(b.and_(x_neg, is_odd), b.fneg(r), r)
    finite_neg = b.and_(b.fcmp_ordered("<", xd, zero), b.fcmp_ordered("!=", xd, ctx.f(F64, -INF)))
    y_finite = b.fcmp_ordered("<", ctx.fabs(yd), ctx.f(F64, INF))
    r = b.select(b.and_(b.and_(finite_neg, y_finite), b.not_(is_int)), ctx.f(F64, NAN), r)
    r = b.select(b.and_(b.fcmp_ordered("==", xd, ctx.f(F64, -1.0)), b.not_(y_finite)), one, r)
    r = b.select(b.or_(ctx.is_nan(xd), ctx.is_nan(yd)), ctx.f(F64, NAN), r)
    r = b.select(b.or_(b.fcmp_ordered("==", yd, zero), b.fcmp_ordered("==", xd, one)), one, r)
    return _narrow(ctx, r, x.type)


def cbrt(ctx: IrContext, x: ir.Value) -> ir.Value:
    from hlort.codegen.llvm import float_math_f32 as f32
    from hlort.codegen.llvm import float_math_f64 as f64

    if isinstance(x.type, ir.DoubleType):
        return f64.cbrt_f64(ctx, x)
    if _in_f32(ctx, x):
        return f32.cbrt_f32(ctx, x)
    b = ctx.b
    xd = _wide(ctx, x)
    a = ctx.fabs(xd)
    r = exp_f64(ctx, b.fmul(log_f64(ctx, a), ctx.f(F64, 1.0 / 3.0)))
    r = b.fsub(r, b.fdiv(b.fsub(b.fmul(b.fmul(r, r), r), a), b.fmul(ctx.f(F64, 3.0), b.fmul(r, r))))
    r = ctx.copysign(r, xd)
    special = b.or_(b.fcmp_ordered("==", a, ctx.f(F64, 0.0)), b.fcmp_unordered("uno", a, a))
    special = b.or_(special, b.fcmp_ordered("==", a, ctx.f(F64, INF)))
    return _narrow(ctx, b.select(special, xd, r), x.type)


def sqrt(ctx: IrContext, x: ir.Value) -> ir.Value:
    return ctx.intrinsic("sqrt", x)


def rsqrt(ctx: IrContext, x: ir.Value) -> ir.Value:
    """1/sqrt(x), computed in f64 for f32 so the result is rounded once."""
    from hlort.codegen.llvm import float_math_f32 as f32

    if _in_f32(ctx, x):
        return f32.rsqrt_f32(ctx, x)
    b = ctx.b
    xd = _wide(ctx, x)
    return _narrow(ctx, b.fdiv(ctx.f(F64, 1.0), ctx.intrinsic("sqrt", xd)), x.type)


def exp(ctx: IrContext, x: ir.Value) -> ir.Value:
    return exp_any(ctx, x)


def log(ctx: IrContext, x: ir.Value) -> ir.Value:
    return log_any(ctx, x)
