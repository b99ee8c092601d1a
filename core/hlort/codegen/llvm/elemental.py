"""Elemental IR: one emitter per elementwise opcode, on register values of single elements.

``emit_elementwise(ctx, instr, values)`` returns the value of ``instr`` given its operands'
values. Semantics are XLA's, matching the reference interpreter bit for bit where it is exact:
NaN-propagating maximum/minimum with -0 < +0, both rounding modes, integer division by zero
(x / 0 = -1, x % 0 = x, INT_MIN / -1 = INT_MIN), shifts whose amounts are read as unsigned and
shift everything out when >= the bit width, saturating float -> int conversion with NaN -> 0,
and TOTALORDER comparisons. No fast-math flags are set, so NaN and infinity behave as IEEE says.
Narrow floats (f16, bf16) are computed in f32 and rounded after every op.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm import float_math as fm
from hlort.codegen.llvm.complex_values import (
    can_emit_complex,
    convert_complex,
    emit_complex,
    involves_complex,
)
from hlort.codegen.llvm.conversions import convert_real
from hlort.codegen.llvm.float8 import (
    f32_to_float8,
    float8_to_f32,
    is_float8,
    keeps_nan_payload,
)
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, F64, I1, I64, round_to, value_type
from hlort.dtypes import DType
from hlort.errors import Unimplemented
from hlort.ir.attributes import ComparisonDirection, ComparisonType
from hlort.ir.instruction import Instruction
from hlort.ir.op_registry import OpRegistry
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import comparison_type_of

Emitter = Callable[[IrContext, Instruction, list[ir.Value]], ir.Value]
ELEMENTAL_EMITTERS: OpRegistry[Opcode, Emitter] = OpRegistry("elemental emitter")
emits = ELEMENTAL_EMITTERS.register  # @emits(Opcode.X) above an op's emitter


def can_emit(instr: Instruction) -> bool:
    """Whether ``instr`` has an elemental emitter for its opcode and element types."""
    from hlort.codegen.llvm.llvm_types import is_compiled_dtype

    if involves_complex(instr):
        return can_emit_complex(instr)
    if instr.opcode not in ELEMENTAL_EMITTERS:
        return False
    shapes = [instr.shape] + [o.shape for o in instr.operands]
    if not all(s.is_array and is_compiled_dtype(s.dtype) for s in shapes):
        return False
    if instr.opcode is Opcode.BITCAST_CONVERT:
        return instr.shape.dtype.bits == instr.operands[0].shape.dtype.bits
    return True


def emit_elementwise(ctx: IrContext, instr: Instruction, values: list[ir.Value]) -> ir.Value:
    if involves_complex(instr):
        return emit_complex(ctx, instr, values)
    fn = ELEMENTAL_EMITTERS.get(instr.opcode)
    if fn is None:
        raise Unimplemented(f"no elemental emitter for {instr.opcode.value} ({instr.name})")
    result = fn(ctx, instr, values)
    return round_to(ctx.b, instr.shape.dtype, result, keeps_nan_payload(instr))


def _dt(instr: Instruction, i: int | None = None) -> DType:
    return (instr.shape if i is None else instr.operands[i].shape).dtype


def _is_float(dtype: DType) -> bool:
    return dtype.is_float


# -- unary ----------------------------------------------------------------------------------------
@emits(Opcode.ABS)
def _abs(ctx, instr, v):
    x = v[0]
    dt = _dt(instr, 0)
    if _is_float(dt):
        return ctx.fabs(x)
    if dt.is_signed_integer:
        b = ctx.b
        return b.select(b.icmp_signed("<", x, ir.Constant(x.type, 0)), b.neg(x), x)
    return x


@emits(Opcode.NEGATE)
def _negate(ctx, instr, v):
    return ctx.b.fneg(v[0]) if _is_float(_dt(instr, 0)) else ctx.b.neg(v[0])


@emits(Opcode.SIGN)
def _sign(ctx, instr, v):
    b, x, dt = ctx.b, v[0], _dt(instr, 0)
    if _is_float(dt):
        t = x.type
        mag = b.uitofp(b.fcmp_ordered("!=", x, ctx.f(t, 0.0)), t)
        return b.select(ctx.is_nan(x), x, ctx.copysign(mag, x))
    zero = ir.Constant(x.type, 0)
    if dt.is_signed_integer:
        pos = b.zext(b.icmp_signed(">", x, zero), x.type)
        neg = b.zext(b.icmp_signed("<", x, zero), x.type)
        return b.sub(pos, neg)
    return b.zext(b.icmp_unsigned("!=", x, zero), x.type)


@emits(Opcode.NOT)
def _not(ctx, instr, v):
    return ctx.b.not_(v[0])


@emits(Opcode.IS_FINITE)
def _is_finite(ctx, instr, v):
    x = v[0]
    return ctx.b.fcmp_ordered("<", ctx.fabs(x), ctx.f(x.type, fm.INF))


@emits(Opcode.COPY, Opcode.REAL, Opcode.OPTIMIZATION_BARRIER)
def _identity(ctx, instr, v):
    return v[0]


@emits(Opcode.IMAG)
def _imag(ctx, instr, v):
    return ir.Constant(v[0].type, 0.0 if _is_float(_dt(instr, 0)) else 0)


_ROUNDING = {
    Opcode.FLOOR: "floor",
    Opcode.CEIL: "ceil",
    Opcode.ROUND_NEAREST_AFZ: "round",
    Opcode.ROUND_NEAREST_EVEN: "roundeven",
}


@emits(*_ROUNDING)
def _rounding(ctx, instr, v):
    if not _is_float(_dt(instr, 0)):
        return v[0]
    return ctx.intrinsic(_ROUNDING[instr.opcode], v[0])


@emits(Opcode.POPCNT)
def _popcnt(ctx, instr, v):
    return ctx.intrinsic("ctpop", v[0])


@emits(Opcode.CLZ)
def _clz(ctx, instr, v):
    return ctx.intrinsic("ctlz", v[0], ir.Constant(I1, 0), extra_types=(I1,))


_TRANSCENDENTAL = {
    Opcode.EXP: fm.exp,
    Opcode.EXPM1: fm.expm1,
    Opcode.LOG: fm.log,
    Opcode.LOG1P: fm.log1p,
    Opcode.LOGISTIC: fm.logistic,
    Opcode.SQRT: fm.sqrt,
    Opcode.RSQRT: fm.rsqrt,
    Opcode.CBRT: fm.cbrt,
    Opcode.TANH: fm.tanh,
    Opcode.SINE: fm.sin,
    Opcode.COSINE: fm.cos,
    Opcode.TAN: fm.tan,
    Opcode.ERF: fm.erf,
}
"""The float routine of each one-operand transcendental of the op table (``OpDef.numerics``);
the binding is the emitter's, the key set the table's (tests/codegen/test_elemental_op_sets.py)."""


@emits(*_TRANSCENDENTAL)
def _transcendental(ctx, instr, v):
    if not _is_float(_dt(instr, 0)):
        raise Unimplemented(f"{instr.opcode.value} of {_dt(instr, 0)}")
    return _TRANSCENDENTAL[instr.opcode](ctx, v[0])


# -- conversions ----------------------------------------------------------------------------------
def convert_value(ctx: IrContext, x: ir.Value, src: DType, dst: DType) -> ir.Value:
    """XLA's convert on one register value (see the interpreter's conversions module)."""
    if src is dst:
        return x
    if src.is_complex or dst.is_complex:
        return convert_complex(ctx, x, src, dst)
    return convert_real(ctx, x, src, dst)


@emits(Opcode.CONVERT)
def _convert(ctx, instr, v):
    return convert_value(ctx, v[0], _dt(instr, 0), _dt(instr))


def to_bits(ctx: IrContext, x: ir.Value, dt: DType) -> ir.Value:
    """The storage bits of a float register value as an integer of the type's width."""
    b = ctx.b
    if dt is dtypes.F16:
        return b.bitcast(b.fptrunc(x, ir.HalfType()), ir.IntType(16))
    if dt is dtypes.BF16:
        return b.trunc(
            b.lshr(b.bitcast(x, ir.IntType(32)), ir.Constant(ir.IntType(32), 16)), ir.IntType(16)
        )
    if dt.is_pred:
        return b.zext(x, ir.IntType(8))
    if is_float8(dt):
        return f32_to_float8(b, dt, x, keep_nan_payload=True)
    if _is_float(dt):
        return b.bitcast(x, ir.IntType(dt.bits))
    return x


def from_bits(ctx: IrContext, bits: ir.Value, dt: DType) -> ir.Value:
    b = ctx.b
    if dt is dtypes.F16:
        return b.fpext(b.bitcast(bits, ir.HalfType()), F32)
    if dt is dtypes.BF16:
        return b.bitcast(b.shl(b.zext(bits, ir.IntType(32)), ir.Constant(ir.IntType(32), 16)), F32)
    if dt.is_pred:
        return b.icmp_unsigned("!=", bits, ir.Constant(bits.type, 0))
    if is_float8(dt):
        return float8_to_f32(b, dt, bits)
    if _is_float(dt):
        return b.bitcast(bits, value_type(dt))
    return bits


@emits(Opcode.BITCAST_CONVERT)
def _bitcast_convert(ctx, instr, v):
    return from_bits(ctx, to_bits(ctx, v[0], _dt(instr, 0)), _dt(instr))


@emits(Opcode.REDUCE_PRECISION)
def _reduce_precision(ctx, instr, v):
    """XLA's bit algorithm (the interpreter's reduce_precision_bits) on the storage bits."""
    import ml_dtypes

    b, x, dt = ctx.b, v[0], _dt(instr, 0)
    if dt is dtypes.F8E4M3FN:  # not IEEE-style: in f32, as the interpreter (then rounded)
        dt = dtypes.F32
    e_bits, m_bits = instr.attrs["exponent_bits"], instr.attrs["mantissa_bits"]
    nbits = dt.bits
    it = ir.IntType(nbits)
    src_m = int(ml_dtypes.finfo(dt.numpy).nmant)
    src_e = nbits - 1 - src_m
    ones = (1 << nbits) - 1
    sign_mask = 1 << (nbits - 1)
    exp_mask = ((1 << src_e) - 1) << src_m
    c = lambda n: ir.Constant(it, n & ones)  # noqa: E731
    bits = to_bits(ctx, x, dt)
    is_nan = b.icmp_unsigned(">", b.and_(bits, c(ones ^ sign_mask)), c(exp_mask))
    if m_bits < src_m:
        shift = src_m - m_bits
        last = 1 << shift
        bias = b.add(b.lshr(b.and_(bits, c(last)), c(shift)), c((last >> 1) - 1))
        bits = b.and_(b.add(bits, bias), c(ones ^ (last - 1)))
    if e_bits < src_e:
        ebias = (1 << (src_e - 1)) - 1
        rbias = (1 << (e_bits - 1)) - 1
        exponent = b.and_(bits, c(exp_mask))
        overflow = b.icmp_unsigned(">", exponent, c((ebias + rbias) << src_m))
        underflow = b.icmp_unsigned("<=", exponent, c((ebias - rbias) << src_m))
        signed_zero = b.and_(bits, c(sign_mask))
        bits = b.select(overflow, b.or_(signed_zero, c(exp_mask)), bits)
        bits = b.select(underflow, signed_zero, bits)
    result = from_bits(ctx, bits, dt)
    nan_value = x if m_bits > 0 else ctx.f(x.type, fm.INF)
    return b.select(is_nan, nan_value, result)


# -- binary arithmetic ----------------------------------------------------------------------------
@emits(Opcode.ADD)
def _add(ctx, instr, v):
    dt = _dt(instr, 0)
    if dt.is_pred:
        return ctx.b.or_(*v)
    return ctx.b.fadd(*v) if _is_float(dt) else ctx.b.add(*v)


@emits(Opcode.SUBTRACT)
def _subtract(ctx, instr, v):
    dt = _dt(instr, 0)
    if dt.is_pred:
        return ctx.b.xor(*v)
    return ctx.b.fsub(*v) if _is_float(dt) else ctx.b.sub(*v)


@emits(Opcode.MULTIPLY)
def _multiply(ctx, instr, v):
    dt = _dt(instr, 0)
    if dt.is_pred:
        return ctx.b.and_(*v)
    return ctx.b.fmul(*v) if _is_float(dt) else ctx.b.mul(*v)


def _int_min(dt: DType, t: ir.IntType) -> ir.Constant:
    return ir.Constant(t, 1 << (dt.bits - 1))


@emits(Opcode.DIVIDE)
def _divide(ctx, instr, v):
    b, (x, y), dt = ctx.b, v, _dt(instr, 0)
    if _is_float(dt):
        return b.fdiv(x, y)
    t = x.type
    zero, one, all_ones = ir.Constant(t, 0), ir.Constant(t, 1), ir.Constant(t, -1)
    is_zero = b.icmp_unsigned("==", y, zero)
    if dt.is_pred:
        return x  # x / true = x; x / false = -1 (true) in XLA's all-bits-set rule
    if dt.is_unsigned_integer:
        q = b.udiv(x, b.select(is_zero, one, y))
        return b.select(is_zero, all_ones, q)
    overflow = b.and_(b.icmp_signed("==", x, _int_min(dt, t)), b.icmp_signed("==", y, all_ones))
    q = b.sdiv(x, b.select(b.or_(is_zero, overflow), one, y))
    q = b.select(overflow, _int_min(dt, t), q)
    return b.select(is_zero, all_ones, q)


@emits(Opcode.REMAINDER)
def _remainder(ctx, instr, v):
    b, (x, y), dt = ctx.b, v, _dt(instr, 0)
    if _is_float(dt):
        return b.frem(x, y)
    t = x.type
    zero, one = ir.Constant(t, 0), ir.Constant(t, 1)
    is_zero = b.icmp_unsigned("==", y, zero)
    if dt.is_unsigned_integer or dt.is_pred:
        return b.select(is_zero, x, b.urem(x, b.select(is_zero, one, y)))
    overflow = b.and_(
        b.icmp_signed("==", x, _int_min(dt, t)), b.icmp_signed("==", y, ir.Constant(t, -1))
    )
    r = b.srem(x, b.select(b.or_(is_zero, overflow), one, y))
    return b.select(is_zero, x, r)


@emits(Opcode.POWER)
def _power(ctx, instr, v):
    (x, y), dt = v, _dt(instr, 0)
    if _is_float(dt):
        return fm.power(ctx, x, y)
    return ctx.b.call(_int_power_function(ctx, x.type, dt.is_signed_integer), [x, y])


def _int_power_function(ctx: IrContext, t: ir.IntType, signed: bool) -> ir.Function:
    """``x ** e`` by square-and-multiply in a loop over the exponent's bits, as a helper.

    A loop keeps the IR small: an unrolled 64-step chain sends LLVM's optimizer into a very
    long compile. Wraps like XLA; for signed e < 0 the result is 1 when x == 1, else 0.
    """
    name = f"hlort_ipow_{'s' if signed else 'u'}{t.width}"
    existing = ctx.module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(ctx.module, ir.FunctionType(t, [t, t]), name)
    fn.linkage = "internal"
    x, e = fn.args
    entry, loop, done = (fn.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ir.IRBuilder(entry)
    one, zero = ir.Constant(t, 1), ir.Constant(t, 0)
    b.cbranch(b.icmp_unsigned("!=", e, zero), loop, done)
    b.position_at_end(loop)
    acc = b.phi(t)
    base = b.phi(t)
    exp = b.phi(t)
    acc.add_incoming(one, entry)
    base.add_incoming(x, entry)
    exp.add_incoming(e, entry)
    new_acc = b.select(b.trunc(exp, I1), b.mul(acc, base), acc)
    new_base = b.mul(base, base)
    new_exp = b.lshr(exp, one)
    acc.add_incoming(new_acc, loop)
    base.add_incoming(new_base, loop)
    exp.add_incoming(new_exp, loop)
    b.cbranch(b.icmp_unsigned("!=", new_exp, zero), loop, done)
    b.position_at_end(done)
    result = b.phi(t)
    result.add_incoming(one, entry)
    result.add_incoming(new_acc, loop)
    out = result
    if signed:
        neg = b.icmp_signed("<", e, zero)
        out = b.select(neg, b.select(b.icmp_signed("==", x, one), one, zero), result)
    b.ret(out)
    return fn


def _float_constant(v: ir.Value) -> float | None:
    """The value of a scalar float constant operand that is not NaN, else None."""
    if not isinstance(v, ir.Constant) or not isinstance(v.type, (ir.FloatType, ir.DoubleType)):
        return None
    c = v.constant
    return float(c) if isinstance(c, (int, float)) and not math.isnan(c) else None


def _minmax_constant(ctx, x: ir.Value, c: ir.Value, value: float, is_max: bool) -> ir.Value:
    """maximum(x, c) for a constant c, not NaN (JAX's relu, clamps): ``x <= c ? c : x``, one
    compare and a masked move where llvm.maximum is three vector operations (max, unordered
    compare, blend). NaN x fails the ordered compare and stays; c = -0 compares strictly, so
    +0 beats it (and -0 beats +0 in minimum); other equal values have equal bits."""
    strict = math.copysign(1.0, value) < 0 if is_max else math.copysign(1.0, value) > 0
    op = ("<" if strict else "<=") if is_max else (">" if strict else ">=")
    return ctx.b.select(ctx.b.fcmp_ordered(op, x, c), c, x)


def _minmax(ctx, instr, v, is_max: bool):
    b, (x, y), dt = ctx.b, v, _dt(instr, 0)
    if _is_float(dt):
        for a, c in ((x, y), (y, x)):
            value = _float_constant(c)
            if value is not None:
                return _minmax_constant(ctx, a, c, value, is_max)
        return ctx.intrinsic("maximum" if is_max else "minimum", x, y)
    if dt.is_pred:
        return b.or_(x, y) if is_max else b.and_(x, y)
    cmp = b.icmp_signed if dt.is_signed_integer else b.icmp_unsigned
    return b.select(cmp(">" if is_max else "<", x, y), x, y)


@emits(Opcode.MAXIMUM)
def _maximum(ctx, instr, v):
    return _minmax(ctx, instr, v, True)


@emits(Opcode.MINIMUM)
def _minimum(ctx, instr, v):
    return _minmax(ctx, instr, v, False)


@emits(Opcode.ATAN2)
def _atan2(ctx, instr, v):
    return fm.atan2(ctx, v[0], v[1])


@emits(Opcode.AND)
def _and(ctx, instr, v):
    return ctx.b.and_(*v)


@emits(Opcode.OR)
def _or(ctx, instr, v):
    return ctx.b.or_(*v)


@emits(Opcode.XOR)
def _xor(ctx, instr, v):
    return ctx.b.xor(*v)


def _shift(ctx, instr, v, kind: str):
    b, (x, amount) = ctx.b, v
    t = x.type
    big = b.icmp_unsigned(">=", amount, ir.Constant(t, t.width))
    safe = b.select(big, ir.Constant(t, 0), amount)
    if kind == "shl":
        return b.select(big, ir.Constant(t, 0), b.shl(x, safe))
    if kind == "lshr":
        return b.select(big, ir.Constant(t, 0), b.lshr(x, safe))
    fill = b.ashr(x, ir.Constant(t, t.width - 1))
    return b.select(big, fill, b.ashr(x, safe))


@emits(Opcode.SHIFT_LEFT)
def _shl(ctx, instr, v):
    return _shift(ctx, instr, v, "shl")


@emits(Opcode.SHIFT_RIGHT_LOGICAL)
def _lshr(ctx, instr, v):
    return _shift(ctx, instr, v, "lshr")


@emits(Opcode.SHIFT_RIGHT_ARITHMETIC)
def _ashr(ctx, instr, v):
    return _shift(ctx, instr, v, "ashr")


# -- comparison and selection ---------------------------------------------------------------------
_SYMBOL = {
    ComparisonDirection.EQ: "==",
    ComparisonDirection.NE: "!=",
    ComparisonDirection.LT: "<",
    ComparisonDirection.LE: "<=",
    ComparisonDirection.GT: ">",
    ComparisonDirection.GE: ">=",
}


def total_order_key(ctx: IrContext, x: ir.Value, dt: DType) -> ir.Value:
    """Signed integer keys ordering floats -NaN < -inf < ... < -0 < +0 < ... < +NaN."""
    b = ctx.b
    bits = to_bits(ctx, x, dt)
    t = bits.type
    magnitude = ir.Constant(t, (1 << (t.width - 1)) - 1)
    return b.xor(bits, b.and_(b.ashr(bits, ir.Constant(t, t.width - 1)), magnitude))


def compare_values(
    ctx: IrContext,
    x: ir.Value,
    y: ir.Value,
    dt: DType,
    direction: ComparisonDirection,
    ctype: ComparisonType,
) -> ir.Value:
    b = ctx.b
    sym = _SYMBOL[direction]
    if ctype is ComparisonType.TOTALORDER and _is_float(dt):
        return b.icmp_signed(sym, total_order_key(ctx, x, dt), total_order_key(ctx, y, dt))
    if _is_float(dt):
        if direction is ComparisonDirection.NE:
            return b.fcmp_unordered("!=", x, y)
        return b.fcmp_ordered(sym, x, y)
    if dt.is_signed_integer and ctype is not ComparisonType.UNSIGNED:
        return b.icmp_signed(sym, x, y)
    return b.icmp_unsigned(sym, x, y)


@emits(Opcode.COMPARE)
def _compare(ctx, instr, v):
    direction = ComparisonDirection(
        getattr(instr.attrs["direction"], "value", instr.attrs["direction"])
    )
    return compare_values(ctx, v[0], v[1], _dt(instr, 0), direction, comparison_type_of(instr))


@emits(Opcode.SELECT)
def _select(ctx, instr, v):
    return ctx.b.select(v[0], v[1], v[2])


@emits(Opcode.CLAMP)
def _clamp(ctx, instr, v):
    lo, x, hi = v
    fake = _FakeInstr(instr)
    return _minmax(ctx, fake, [_minmax(ctx, fake, [x, lo], True), hi], False)


class _FakeInstr:
    """Presents clamp's operand type to the min/max emitters."""

    def __init__(self, clamp: Instruction):
        self.operands = [clamp.operands[1]]
        self.shape = clamp.shape


def scalar_type(dtype: DType) -> ir.Type:
    return value_type(dtype)


__all__ = ["emit_elementwise", "can_emit", "convert_value", "compare_values", "I64", "F64"]
