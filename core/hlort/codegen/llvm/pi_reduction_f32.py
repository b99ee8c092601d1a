"""Exact argument reduction of an f32 by pi/2 in integers (Payne-Hanek), for f32-only sin/cos/tan.

x = m * 2**(e-23) with a 24-bit integer m. The bits of 2/pi before position e - 24 add multiples
of 4 quarter turns, so only a 96-bit window from there matters: (m * window) mod 2**96, read as
2 integer bits (the quadrant) and 94 fraction bits, is x * 2/pi mod 4 to within 2**-70. The
window is three 32-bit words shifted out of a 9-word table at a computed index (loads, no
branches) and multiplied with three 32x32->64-bit products, which GPUs have as one instruction
(PTX mul.wide.u32, AMDGPU v_mad_u64_u32). The same path serves every |x| >= 1/2. The f32
closest to a multiple of pi/2, 16367173 * 2**72, leaves 2**-29.9 quarter turns (a search of all
f32), so the 2**-62 kept is 2**-32 of the smallest reduced argument.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, I32, I64
from hlort.codegen.llvm.pi_reduction_f64 import pi_fraction

_PAD = 32  # zero bits before the first bit of 2/pi, so the window may start at bit -31
_WORDS = 9


def _two_over_pi_words() -> list[int]:
    """32-bit words of 2/pi, most significant first, after _PAD zero bits."""
    total = _WORDS * 32
    scaled = math.floor(Fraction(2) / pi_fraction(total + 64) * (1 << (total - _PAD)))
    return [(scaled >> (32 * (_WORDS - 1 - i))) & 0xFFFFFFFF for i in range(_WORDS)]


_TABLE = _two_over_pi_words()


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


_PIO2 = pi_fraction(200) / 2
_PIO2_HI32 = _f32(float(_PIO2))
_PIO2_LO32 = _f32(float(_PIO2 - Fraction(_PIO2_HI32)))


def _word(ctx: IrContext, index: ir.Value) -> ir.Value:
    b = ctx.b
    table = ctx.constant_table("hlort_two_over_pi_u32", I32, _TABLE)
    ptr = b.gep(table, [ir.Constant(I64, 0), index], inbounds=True, source_etype=table.value_type)
    return b.zext(b.load(ptr, typ=I32), I64)


def reduce_quarter_turns_f32(ctx: IrContext, x: ir.Value) -> tuple[ir.Value, dd.DD]:
    """(q, a): x = q pi/2 + a, q an i32 in 0..3, a = a.hi + a.lo with |a| <= pi/4 (+ 1 ulp),
    for a finite f32 x with |x| >= 1/2 (other inputs give values the caller replaces)."""
    b = ctx.b
    c64 = lambda v: ir.Constant(I64, v)  # noqa: E731
    bits = b.and_(b.bitcast(x, I32), ir.Constant(I32, 0x7FFFFFFF))
    exponent = b.sub(b.lshr(bits, ir.Constant(I32, 23)), ir.Constant(I32, 127))
    exponent = b.select(
        b.icmp_signed("<", exponent, ir.Constant(I32, -1)), ir.Constant(I32, -1), exponent
    )
    exponent = b.select(
        b.icmp_signed(">", exponent, ir.Constant(I32, 127)), ir.Constant(I32, 127), exponent
    )
    m = b.zext(b.or_(b.and_(bits, ir.Constant(I32, 0x7FFFFF)), ir.Constant(I32, 0x800000)), I64)
    start = b.zext(b.add(exponent, ir.Constant(I32, _PAD - 25)), I64)  # bit e - 24 of 2/pi
    word = b.lshr(start, c64(5))
    shift = b.and_(start, c64(31))
    w = [_word(ctx, b.add(word, c64(i))) for i in range(4)]
    v = [b.lshr(b.shl(b.or_(b.shl(w[i], c64(32)), w[i + 1]), shift), c64(32)) for i in range(3)]
    low32 = c64(0xFFFFFFFF)
    lo = b.mul(m, v[2])
    mid = b.add(b.mul(m, v[1]), b.lshr(lo, c64(32)))
    hi = b.add(b.mul(m, v[0]), b.lshr(mid, c64(32)))
    top = b.or_(b.shl(hi, c64(32)), b.and_(mid, low32))  # x * 2/pi mod 4, in units of 2**-62
    q = b.lshr(b.add(top, c64(1 << 61)), c64(62))
    frac = b.sub(top, b.shl(q, c64(62)))  # signed, |frac| <= 2**61
    y_hi = b.sitofp(frac, F32)
    y_lo = b.sitofp(b.sub(frac, b.fptosi(y_hi, I64)), F32)
    unit = ctx.f(F32, 2.0**-62)
    y_hi, y_lo = b.fmul(y_hi, unit), b.fmul(y_lo, unit)
    a_hi, a_lo = dd.two_prod(ctx, y_hi, ctx.f(F32, _PIO2_HI32))
    a_lo = b.fadd(a_lo, ctx.fma(y_hi, ctx.f(F32, _PIO2_LO32), b.fmul(y_lo, ctx.f(F32, _PIO2_HI32))))
    a_hi, a_lo = dd.fast_two_sum(ctx, a_hi, a_lo)
    q = b.trunc(q, I32)
    negative = b.icmp_signed("<", b.bitcast(x, I32), ir.Constant(I32, 0))
    q = b.select(negative, b.sub(ir.Constant(I32, 0), q), q)
    a_hi = b.select(negative, b.fneg(a_hi), a_hi)
    a_lo = b.select(negative, b.fneg(a_lo), a_lo)
    return b.and_(q, ir.Constant(I32, 3)), (a_hi, a_lo)


__all__ = ["reduce_quarter_turns_f32"]
