"""64-bit integers to the narrow floats (f16, bf16, float8), rounded once.

The interpreter rounds a 64-bit integer to a narrow float once, to nearest even
(``float_rounding.float_from_int``). Converting through f64 with ``sitofp`` would round twice
for integers above 2**53. Instead the integer becomes an f64 that keeps enough bits and a
*sticky* bit: integers below 2**53 convert exactly; larger magnitudes drop their low 11 bits
and OR "any of them was set" into the lowest kept bit. That f64 has at least 42 significant
bits, with the sticky bit far below the 24th, so the existing f64 -> narrow path (round to odd
to f32, then to nearest even) rounds it exactly as it would round the integer itself.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64, I64

_DROPPED = 11  # 64 - 53


def int64_to_f64_sticky(ctx: IrContext, x: ir.Value, signed: bool) -> ir.Value:
    """An f64 (exact below 2**53, else truncated with a sticky bit) that any rounding to 26
    or fewer significant bits rounds as the 64-bit integer ``x`` itself."""
    b = ctx.b
    c = lambda v: ir.Constant(I64, v)  # noqa: E731
    negative = b.icmp_signed("<", x, c(0)) if signed else None
    magnitude = b.select(negative, b.neg(x), x) if signed else x  # INT_MIN: 2**63 unsigned
    exact = b.uitofp(magnitude, F64)
    kept = b.lshr(magnitude, c(_DROPPED))
    lost = b.icmp_unsigned("!=", b.and_(magnitude, c((1 << _DROPPED) - 1)), c(0))
    sticky = b.or_(kept, b.zext(lost, I64))
    scaled = b.fmul(b.uitofp(sticky, F64), ctx.f(F64, float(1 << _DROPPED)))
    small = b.icmp_unsigned("<", magnitude, c(1 << 53))
    value = b.select(small, exact, scaled)
    return b.select(negative, b.fneg(value), value) if signed else value
