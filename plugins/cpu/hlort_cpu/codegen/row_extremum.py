"""A row's float maximum (or minimum) as one vmaxps per vector, with IEEE maximum's result.

HLO's maximum is IEEE 754-2019's (llvm.maximum): NaN wins and -0 < +0. x86 has no instruction
for it before AVX10.2, so a vectorized llvm.maximum fold is six operations per vector (sign
tests, blends, the max, an unordered compare, a masked move), and its horizontal reduction at
the row's end a long chain of them. Here the fold is ``llvm.maxnum`` with ``nnan nsz`` (one
vmaxps), and two more folds, one operation each, say what that loses:

- NaN: an OR of ``x uno x``. With a NaN in the row, the maxnum fold is poison (``nnan``) and is
  never used: the result is a NaN (the init's own when it is one, else the quiet NaN). Which NaN
  a maximum returns is not specified by HLO, nor kept by the interpreter's NumPy reduction.
- The sign of a zero result (``nsz``: either zero may come out): an AND of every value's bits
  (an OR for minimum). A maximum that is zero means every value is <= 0, so a value with a
  clear sign bit is +0: the result is +0 when the AND's sign bit is clear, else -0. (Minimum:
  every value is >= 0, and a set sign bit is a -0.)

The init takes part as one more value, so the result is the IEEE maximum of the init and the
row, as the interpreter folds it; an empty row gives the init.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.ir_context import IrContext
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes

_FLOATS = (ir.HalfType, ir.FloatType, ir.DoubleType)


def extremum_kind(r: Instruction, slot: ir.Type) -> Opcode | None:
    """MAXIMUM or MINIMUM when ``r`` is a one-operand float max/min reduce (accumulated in
    ``slot``, a float type), else None."""
    ops = variadic_reducer_opcodes(r.attrs["to_apply"])
    if ops is None or len(ops) != 1 or ops[0] not in (Opcode.MAXIMUM, Opcode.MINIMUM):
        return None
    if not r.operands[0].shape.dtype.is_float or not isinstance(slot, _FLOATS):
        return None
    return ops[0]


class RowExtremum:
    """The NaN and zero-sign folds of one reduce; allocate before the loops (entry block)."""

    def __init__(self, b: ir.IRBuilder, op: Opcode, slot: ir.Type):
        self.is_max = op is Opcode.MAXIMUM
        self.slot = slot
        self.bits_type = ir.IntType(_width(slot))
        self.nan = b.alloca(ir.IntType(1))
        self.bits = b.alloca(self.bits_type)
        self.init: ir.Value | None = None

    def start(self, ctx: IrContext, init: ir.Value) -> None:
        """At the row's start, after the accumulator is set to ``init``."""
        b = ctx.b
        self.init = init
        b.store(ctx.is_nan(init), self.nan)
        b.store(b.bitcast(init, self.bits_type), self.bits)

    def step(self, ctx: IrContext, acc: ir.Value, value: ir.Value) -> ir.Value:
        """Fold one value: returns the new accumulator (and updates the flag and the bits)."""
        b = ctx.b
        nan = b.load(self.nan, typ=ir.IntType(1))
        b.store(b.or_(nan, ctx.is_nan(value)), self.nan)
        bits = b.load(self.bits, typ=self.bits_type)
        vbits = b.bitcast(value, self.bits_type)
        b.store(b.and_(bits, vbits) if self.is_max else b.or_(bits, vbits), self.bits)
        name = "maxnum" if self.is_max else "minnum"
        fn = ctx.function(f"llvm.{name}.{_suffix(self.slot)}", self.slot, [self.slot] * 2)
        return b.call(fn, [acc, value], fastmath=("nnan", "nsz"))

    def finish(self, ctx: IrContext, acc: ir.Value) -> ir.Value:
        """The row's result from the accumulator after the loop."""
        b = ctx.b
        t = self.slot
        bits = b.load(self.bits, typ=self.bits_type)
        sign_set = b.icmp_signed("<", bits, ir.Constant(self.bits_type, 0))
        zero = b.select(sign_set, ctx.f(t, -0.0), ctx.f(t, 0.0))
        signed = b.select(b.fcmp_ordered("==", acc, ctx.f(t, 0.0)), zero, acc)
        nan = b.select(ctx.is_nan(self.init), self.init, ctx.f(t, math.nan))
        return b.select(b.load(self.nan, typ=ir.IntType(1)), nan, signed)


def _width(t: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(t)]


def _suffix(t: ir.Type) -> str:
    return {ir.HalfType: "f16", ir.FloatType: "f32", ir.DoubleType: "f64"}[type(t)]
