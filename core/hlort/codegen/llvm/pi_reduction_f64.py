"""Exact f64 argument reduction by pi/2, branch-free, for every finite double.

``reduce_quarter_turns`` returns (q, a_hi, a_lo) with |x| = (q + (a_hi + a_lo) / (pi/2)) * pi/2
modulo 2*pi, |a| <= pi/4, a_hi + a_lo good to ~2**-100 relative even for the doubles closest to
a multiple of pi/2 (the worst is ~2**-61 away, Muller's 6381956970095103 * 2**797). Two
reductions are computed and one is selected, so the loop stays straight-line and vectorizes:

* Cody-Waite for |x| < 2**20 * pi/2: n = round(x * 2/pi); x - n * P1 is exact with one FMA (P1 =
  pi/2 rounded, n < 2**20), then n * P2 and n * P3 are subtracted with error-free transforms.
* Payne-Hanek beyond: x = M * 2**E with M < 2**53 an integer. Bits of 2/pi whose product with
  x is a multiple of 4 do not change the result mod 2*pi, so only the 212 bits starting at
  position E - 1 matter. A table (one row per exponent, 4 doubles of 53 bits each, scaled by
  2**E so every entry is a normal double) gives them; the row is gathered by the exponent field.
  M * C0 lies on a 2**-51 grid below 2**55, M * C1 on a 2**-104 grid below 4, M * C2 below
  2**-51, so splitting each exact product (two_prod) into an integer (mod 4) and a fraction, the
  leading fractions add exactly and only terms below 2**-100 round.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm.double_double import const
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64, I64

CHUNKS = 4  # 53-bit pieces of 2/pi per table row
MIN_BIASED_EXPONENT = 1043  # rows start at |x| = 2**20: below that Cody-Waite is used
MAX_BIASED_EXPONENT = 2046  # the largest finite double's
CODY_WAITE_LIMIT = 2.0**20 * math.pi / 2
TABLE_NAME = "hlort_f64_two_over_pi_rows"


@functools.cache
def arctan_inverse(n: int, bits: int) -> Fraction:
    """atan(1/n) within 2**-bits (n >= 2), by its series in fixed-point integers."""
    guard = bits + 16
    one = 1 << guard
    total, term, k, sign = 0, one // n, 1, 1
    while term:
        total += sign * (term // k)
        term //= n * n
        k += 2
        sign = -sign
    return Fraction(total, one)


@functools.cache
def pi_fraction(bits: int) -> Fraction:
    """pi within 2**-bits, by Machin's formula."""
    return 4 * (4 * arctan_inverse(5, bits + 8) - arctan_inverse(239, bits + 8))


PI_BITS = 1400
PI = dd.split(pi_fraction(PI_BITS))
PIO2 = dd.split(pi_fraction(PI_BITS) / 2)
_PIO2_EXACT = pi_fraction(PI_BITS) / 2
_P1 = float(_PIO2_EXACT)
_P2 = float(_PIO2_EXACT - Fraction(_P1))
_P3 = float(_PIO2_EXACT - Fraction(_P1) - Fraction(_P2))


@functools.cache
def two_over_pi_rows() -> tuple[float, ...]:
    """Row r (biased exponent MIN_BIASED_EXPONENT + r) holds C_k = I_k * 2**(-51 - 53k), I_k the
    53-bit integer formed by bits j0 + 53k .. j0 + 53k + 52 of 2/pi (bit j weighs 2**-j; bits
    j <= 0 are 0), j0 = E - 1 and E = exponent - 1075 (x = M * 2**E, M an integer)."""
    top = PI_BITS - 100
    two_over_pi = math.floor(2 / pi_fraction(PI_BITS) * (1 << top))  # bits 1..top
    mask = (1 << 53) - 1
    rows: list[float] = []
    for biased in range(MIN_BIASED_EXPONENT, MAX_BIASED_EXPONENT + 1):
        j0 = biased - 1075 - 1
        for k in range(CHUNKS):
            last = j0 + 53 * k + 52
            assert last <= top
            piece = (two_over_pi >> (top - last)) & mask if last >= 1 else 0
            rows.append(math.ldexp(piece, -51 - 53 * k))
    return tuple(rows)


def _table(ctx: IrContext) -> ir.GlobalVariable:
    return ctx.constant_table(TABLE_NAME, F64, two_over_pi_rows())


def _round(ctx: IrContext, x: ir.Value) -> ir.Value:
    return ctx.intrinsic("roundeven", x)


def _split_integer(ctx: IrContext, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(i, f): x = i + f exactly, i an integer, |f| <= 1/2 (x on a grid of at least 2**-104)."""
    i = _round(ctx, x)
    return i, ctx.b.fsub(x, i)


def _mod4(ctx: IrContext, x: ir.Value) -> ir.Value:
    """x minus the nearest multiple of 4 (exact for |x| < 2**55)."""
    b = ctx.b
    return b.fsub(x, b.fmul(const(4.0), _round(ctx, b.fmul(x, const(0.25)))))


def _cody_waite(ctx: IrContext, ax: ir.Value) -> tuple[ir.Value, dd.DD]:
    b = ctx.b
    small = b.fcmp_ordered("<", ax, const(CODY_WAITE_LIMIT))
    x = b.select(small, ax, const(0.0))
    n = _round(ctx, b.fmul(x, const(2 / math.pi)))
    r1 = ctx.fma(b.fneg(n), const(_P1), x)
    p2, p2_err = dd.two_prod(ctx, n, const(_P2))
    s, e = dd.two_sum(ctx, r1, b.fneg(p2))
    lo = b.fsub(b.fsub(e, p2_err), b.fmul(n, const(_P3)))
    return n, dd.two_sum(ctx, s, lo)


def _payne_hanek(ctx: IrContext, ax: ir.Value) -> tuple[ir.Value, dd.DD]:
    b = ctx.b
    bits = b.bitcast(ax, I64)
    biased = b.lshr(bits, ir.Constant(I64, 52))
    row = b.sub(biased, ir.Constant(I64, MIN_BIASED_EXPONENT))
    row = b.select(b.icmp_signed("<", row, ir.Constant(I64, 0)), ir.Constant(I64, 0), row)
    last_row = MAX_BIASED_EXPONENT - MIN_BIASED_EXPONENT
    row = b.select(
        b.icmp_signed(">", row, ir.Constant(I64, last_row)), ir.Constant(I64, last_row), row
    )
    mantissa = b.or_(b.and_(bits, ir.Constant(I64, (1 << 52) - 1)), ir.Constant(I64, 1075 << 52))
    m = b.bitcast(mantissa, F64)  # the integer M in [2**52, 2**53)
    table = _table(ctx)
    base = b.mul(row, ir.Constant(I64, CHUNKS))
    c = []
    for k in range(CHUNKS):
        ptr = b.gep(table, [ir.Constant(I64, 0), b.add(base, ir.Constant(I64, k))], inbounds=True)
        c.append(b.load(ptr, align=8))
    p0, e0 = dd.two_prod(ctx, m, c[0])
    p1, e1 = dd.two_prod(ctx, m, c[1])
    p2, e2 = dd.two_prod(ctx, m, c[2])
    p3 = b.fmul(m, c[3])
    i_p0, f_p0 = _split_integer(ctx, _mod4(ctx, p0))
    i_e0, f_e0 = _split_integer(ctx, e0)
    i_f0, f0 = _split_integer(ctx, b.fadd(f_p0, f_e0))  # exact: both on the 2**-51 grid
    i_p1, f_p1 = _split_integer(ctx, p1)
    s, t = dd.two_sum(ctx, f0, f_p1)
    i_s, s = _split_integer(ctx, s)
    u = b.fadd(t, e1)  # exact: both on the 2**-104 grid, below 2**-51
    v, w = dd.two_sum(ctx, u, p2)
    h, l0 = dd.two_sum(ctx, s, v)
    lo = b.fadd(l0, b.fadd(w, b.fadd(e2, p3)))
    fh, fl = dd.two_sum(ctx, h, lo)
    i_h, fh = _split_integer(ctx, fh)
    n = b.fadd(b.fadd(b.fadd(i_p0, i_e0), b.fadd(i_f0, i_p1)), b.fadd(i_s, i_h))
    turns = dd.mul_dd(ctx, (fh, fl), PIO2_CONST)
    return n, dd.fast_two_sum(ctx, *turns)


PIO2_CONST = (const(PIO2[0]), const(PIO2[1]))


def reduce_quarter_turns(ctx: IrContext, ax: ir.Value) -> tuple[ir.Value, dd.DD]:
    """(q, (a_hi, a_lo)) for finite ax = |x| >= 0: ax = q * pi/2 + a (mod 2*pi), q in 0..3 (i64).

    Infinite and NaN inputs give an unspecified q and a; callers select NaN for them.
    """
    b = ctx.b
    n_cw, a_cw = _cody_waite(ctx, ax)
    n_ph, a_ph = _payne_hanek(ctx, ax)
    small = b.fcmp_ordered("<", ax, const(CODY_WAITE_LIMIT))
    n = b.select(small, n_cw, n_ph)
    a = dd.select_dd(ctx, small, a_cw, a_ph)
    finite_n = b.select(b.fcmp_ordered("<", ctx.fabs(n), const(2.0**60)), n, const(0.0))
    q = b.and_(b.fptosi(finite_n, I64), ir.Constant(I64, 3))
    return q, a
