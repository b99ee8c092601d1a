"""Double-double arithmetic as straight-line LLVM IR, for f64 functions that need > 53 bits.

A double-double is an unevaluated sum ``hi + lo`` of two f64 values. ``two_sum``,
``fast_two_sum`` and ``two_prod`` are error-free (Knuth, Dekker; ``two_prod`` with one fused
multiply-add), so argument reductions and logarithms can carry ~106 bits and round once at the
end. The emitted IR has no fast-math flags, so LLVM keeps every operation as written (no
reassociation, no contraction into FMAs), which these transformations rely on.
"""

from __future__ import annotations

from fractions import Fraction

import llvmlite.ir as ir

from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64

DD = tuple[ir.Value, ir.Value]


def const(value: float) -> ir.Constant:
    return ir.Constant(F64, float(value))


def two_sum(ctx: IrContext, a: ir.Value, b: ir.Value) -> DD:
    """(s, e) with s = fl(a + b) and s + e = a + b exactly, for any magnitudes."""
    bld = ctx.b
    s = bld.fadd(a, b)
    bb = bld.fsub(s, a)
    e = bld.fadd(bld.fsub(a, bld.fsub(s, bb)), bld.fsub(b, bb))
    return s, e


def fast_two_sum(ctx: IrContext, a: ir.Value, b: ir.Value) -> DD:
    """(s, e) with s + e = a + b exactly, provided |a| >= |b| (or a is 0)."""
    bld = ctx.b
    s = bld.fadd(a, b)
    return s, bld.fsub(b, bld.fsub(s, a))


def two_prod(ctx: IrContext, a: ir.Value, b: ir.Value) -> DD:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (barring underflow)."""
    p = ctx.b.fmul(a, b)
    return p, ctx.fma(a, b, ctx.b.fneg(p))


def mul_dd_d(ctx: IrContext, a: DD, b: ir.Value) -> DD:
    """(a.hi + a.lo) * b, about 2**-104 relative, not normalized."""
    p, e = two_prod(ctx, a[0], b)
    return p, ctx.fma(a[1], b, e)


def mul_dd(ctx: IrContext, a: DD, b: DD) -> DD:
    """(a.hi + a.lo) * (b.hi + b.lo) dropping lo * lo, not normalized."""
    bld = ctx.b
    p, e = two_prod(ctx, a[0], b[0])
    return p, bld.fadd(e, ctx.fma(a[0], b[1], bld.fmul(a[1], b[0])))


def add_dd(ctx: IrContext, a: DD, b: DD) -> DD:
    """(a.hi + a.lo) + (b.hi + b.lo), normalized; exact high sum, lows added once."""
    bld = ctx.b
    s, e = two_sum(ctx, a[0], b[0])
    return fast_two_sum(ctx, s, bld.fadd(e, bld.fadd(a[1], b[1])))


def sub_from_const(ctx: IrContext, c: DD, a: DD) -> DD:
    """(c.hi + c.lo) - (a.hi + a.lo) for double-double constants such as pi or pi/2."""
    bld = ctx.b
    s, e = two_sum(ctx, c[0], bld.fneg(a[0]))
    return fast_two_sum(ctx, s, bld.fadd(e, bld.fsub(c[1], a[1])))


def div_dd(ctx: IrContext, num: DD, den: DD) -> DD:
    """num / den with one correction step: about 2**-104 relative, not normalized."""
    bld = ctx.b
    q = bld.fdiv(num[0], den[0])
    residual = bld.fsub(bld.fadd(ctx.fma(bld.fneg(q), den[0], num[0]), num[1]), bld.fmul(q, den[1]))
    return q, bld.fdiv(residual, den[0])


def select_dd(ctx: IrContext, cond: ir.Value, a: DD, b: DD) -> DD:
    return ctx.b.select(cond, a[0], b[0]), ctx.b.select(cond, a[1], b[1])


def split(value: Fraction) -> tuple[float, float]:
    """(hi, lo): the double nearest ``value`` and the double nearest what is left."""
    hi = float(value)
    return hi, float(value - Fraction(hi))
