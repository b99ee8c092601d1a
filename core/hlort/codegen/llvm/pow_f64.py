"""f64 pow as one outlined function per module (outlined_math.py), vectorized by call.

pow(x, y) = exp(y log|x|), carried in double-double and rounded once:

* log: x = 2**k z, z in [0.7, 1.41); a 128-row table (pow_tables_f64.py) gives invc ~ 1/c with
  r = z invc - 1 exact (one fma) and log(c) as a double-double; log1p(r) on |r| < 0.0053 is
  r - r**2/2 (double-double) + r**3 (1/3 - r/4 + ... + r**6/9) (Taylor, truncation 2**-71).
* y log|x| as a double-double (one fma for the product's error).
* exp: k = round(128 t / ln 2), t - k ln2/128 = r (|r| < 0.0028), a 128-row table of
  2**(i/128) and 2**m put into the exponent bits, expm1(r) to degree 6; the result
  scale * (1 + tmp) is one fma, so it is rounded once.

Lanes with a positive normal x and |y log x| < 708 take that path alone; when any lane of a
vector does not, a second block adds what Annex F and the range need: over/underflow, results
rounded once into the subnormal range, negative bases, +-0, +-inf, NaN, pow(x, +-0) =
pow(1, y) = 1. Both blocks round a regular lane identically, so no result depends on its
neighbours. Measured against a long-double (64-bit significand) reference, 12M samples over
the whole range (test_float_math_f64 keeps 0.51 as the bound): < 0.507 ulp.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm import double_double as dd
from hlort.codegen.llvm import pow_tables_f64 as tables
from hlort.codegen.llvm.float_parts import LN2_HI, LN2_LO
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64, I1, I32, I64, PTR
from hlort.codegen.llvm.outlined_math import call_outlined

FUNCTION_NAME = "hlort_pow_f64"
INF = math.inf
NAN = math.nan
_REGULAR_LIMIT = 708.0  # |y log x| below this: exp is a normal double, 2**m fits the exponent
_EXP_ARG_LIMIT = 1100.0  # beyond this the result over/underflows whatever the rounding
_LOG1P_TAIL = tuple((-1) ** (k + 1) / k for k in range(9, 2, -1))  # r**9/9 .. r**3/3, over r**3
_EXPM1_TAIL = tuple(1.0 / math.factorial(k) for k in range(6, 1, -1))  # r**6/720 .. r**2/2
_INV_LN2_N = tables.EXP_N / math.log(2)
_LN2_N_HI = LN2_HI / tables.EXP_N  # k * _LN2_N_HI is exact for |k| < 2**20
_LN2_N_LO = LN2_LO / tables.EXP_N


def power_f64(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """C99 pow of f64 operands: a call of the module's one pow function."""
    return call_outlined(ctx, FUNCTION_NAME, pow_body, x, y)


def _float_type(it: ir.Type) -> ir.Type:
    return ir.VectorType(F64, it.count) if isinstance(it, ir.VectorType) else F64


# -- tables ---------------------------------------------------------------------------------------
def _table(ctx: IrContext, name: str, t: ir.Type, rows) -> ir.GlobalVariable:
    return ctx.constant_table(name, t, (v for row in rows for v in row))


def _gather(ctx: IrContext, table: ir.GlobalVariable, index: ir.Value) -> ir.Value:
    """table[index] for an i64 index or a vector of them (one masked gather)."""
    b = ctx.b
    et = table.value_type.element
    if not isinstance(index.type, ir.VectorType):
        ptr = b.gep(
            table, [ir.Constant(I64, 0), index], inbounds=True, source_etype=table.value_type
        )
        return b.load(ptr, typ=et)
    lanes = index.type.count
    vt = ir.VectorType(et, lanes)
    ptrs = b.gep(table, [index], inbounds=True, source_etype=et)
    ptrs.type = ir.VectorType(PTR, lanes)  # llvmlite types a vector GEP as one pointer
    masks = ir.VectorType(I1, lanes)
    fn = ctx.function(
        f"llvm.masked.gather.v{lanes}{'f64' if et == F64 else 'i64'}.v{lanes}p0",
        vt,
        [ptrs.type, I32, masks, vt],
    )
    return b.call(fn, [ptrs, ir.Constant(I32, 8), ctx.const(masks, 1), ir.Constant(vt, None)])


# -- log and exp ----------------------------------------------------------------------------------
def _log_dd(ctx: IrContext, bits: ir.Value, k_shift: ir.Value) -> dd.DD:
    """log(x) as a double-double for the bits of a positive normal x, minus k_shift * log 2."""
    b, it = ctx.b, bits.type
    t = _float_type(it)
    table = _table(ctx, "hlort_pow_f64_log", F64, tables.log_table())
    tmp = b.sub(bits, ctx.const(it, tables.LOG_OFFSET))
    row = b.and_(b.lshr(tmp, ctx.const(it, 52 - tables.LOG_BITS)), ctx.const(it, tables.LOG_N - 1))
    k = b.ashr(tmp, ctx.const(it, 52))
    z = b.bitcast(b.sub(bits, b.shl(k, ctx.const(it, 52))), t)
    kd = b.sitofp(b.sub(k, k_shift), t)
    row = b.shl(row, ctx.const(it, 2))
    invc = _gather(ctx, table, row)
    logc_hi = _gather(ctx, table, b.or_(row, ctx.const(it, 1)))
    logc_lo = _gather(ctx, table, b.or_(row, ctx.const(it, 2)))
    r = ctx.fma(z, invc, ctx.f(t, -1.0))  # exact (pow_tables_f64 chooses invc so)
    t1 = ctx.fma(kd, ctx.f(t, LN2_HI), logc_hi)  # exact (pow_tables_f64._log_dd)
    t2, e2 = dd.fast_two_sum(ctx, t1, r)  # |t1| >= |r| or t1 = 0 (asserted by the table)
    ar = b.fmul(r, ctx.f(t, -0.5))
    ar2 = b.fmul(r, ar)
    e3 = ctx.fma(ar, r, b.fneg(ar2))
    hi, e4 = dd.fast_two_sum(ctx, t2, ar2)  # |t2| > r**2/2: |r| or |log x| > 2**-9
    r2 = b.fmul(r, r)
    p = b.fmul(b.fmul(r2, r), ctx.horner(r, _LOG1P_TAIL))
    lo = b.fadd(b.fadd(e2, e3), b.fadd(e4, b.fadd(p, ctx.fma(kd, ctx.f(t, LN2_LO), logc_lo))))
    return dd.fast_two_sum(ctx, hi, lo)


def _exp_parts(ctx: IrContext, xh: ir.Value, xl: ir.Value) -> tuple[ir.Value, ...]:
    """(tmp, table bits, k) with exp(xh + xl) = 2**(k/128) (1 + tmp) to ~2**-61, for
    |xh| <= 1100; the table bits plus k << 45 are the bits of 2**(k/128) when it is normal."""
    b, t = ctx.b, xh.type
    it = ctx.int_type_of(t)
    table = _table(ctx, "hlort_pow_f64_exp", I64, tables.exp_table())
    kd = ctx.intrinsic("roundeven", b.fmul(xh, ctx.f(t, _INV_LN2_N)))
    k = b.fptosi(kd, it)
    r = ctx.fma(kd, ctx.f(t, -_LN2_N_HI), xh)  # exact
    r = b.fadd(ctx.fma(kd, ctx.f(t, -_LN2_N_LO), r), xl)
    row = b.shl(b.and_(k, ctx.const(it, tables.EXP_N - 1)), ctx.const(it, 1))
    tail = b.bitcast(_gather(ctx, table, row), t)
    bits = _gather(ctx, table, b.or_(row, ctx.const(it, 1)))
    expm1 = ctx.fma(b.fmul(r, r), ctx.horner(r, _EXPM1_TAIL), r)
    return b.fadd(tail, expm1), bits, k


def pow2(ctx: IrContext, m: ir.Value, t: ir.Type) -> ir.Value:
    """2**m for integers m in [-1022, 1023] (of t's integer type)."""
    it = ctx.int_type_of(t)
    return ctx.b.bitcast(ctx.b.shl(ctx.b.add(m, ctx.const(it, 1023)), ctx.const(it, 52)), t)


def _scaled(ctx: IrContext, tmp: ir.Value, bits: ir.Value, k: ir.Value) -> ir.Value:
    """2**(k/128) (1 + tmp) rounded once, for any |k| < 2**18: +inf, 0 and subnormals too.

    Normal results round in the same fma as the regular path (then scale exactly). Subnormal
    ones would round twice that way, so as glibc's exp does, 1 + v 2**1022 is formed as a
    double-double and rounded where the subnormal grid lies, then scaled exactly.
    """
    b, t = ctx.b, tmp.type
    it = ctx.int_type_of(t)
    steps = tables.EXP_BITS
    mid = b.bitcast(
        b.add(bits, b.shl(b.and_(k, ctx.const(it, tables.EXP_N - 1)), ctx.const(it, 52 - steps))), t
    )
    m = b.ashr(k, ctx.const(it, steps))
    half = b.ashr(m, ctx.const(it, 1))
    first = b.fmul(mid, pow2(ctx, half, t))
    normal = b.fmul(ctx.fma(first, tmp, first), pow2(ctx, b.sub(m, half), t))
    p, p_err = dd.two_prod(ctx, mid, tmp)
    hi, lo = dd.fast_two_sum(ctx, mid, p)
    up = b.add(m, ctx.const(it, 1022))
    unit = pow2(ctx, b.select(b.icmp_signed("<", up, ctx.const(it, 64)), up, ctx.const(it, 64)), t)
    yh, yl = b.fmul(hi, unit), b.fmul(b.fadd(lo, p_err), unit)  # in units of 2**-1022
    one = ctx.f(t, 1.0)
    s, s_err = dd.fast_two_sum(ctx, one, yh)
    subnormal = b.fmul(b.fsub(b.fadd(s, b.fadd(s_err, yl)), one), ctx.f(t, 2.0**-1022))
    return b.select(b.fcmp_ordered("<", yh, one), subnormal, normal)


# -- pow ------------------------------------------------------------------------------------------
def _all(ctx: IrContext, mask: ir.Value) -> ir.Value:
    if not isinstance(mask.type, ir.VectorType):
        return mask
    word = ir.IntType(mask.type.count)
    return ctx.b.icmp_unsigned("==", ctx.b.bitcast(mask, word), ir.Constant(word, -1))


def pow_body(ctx: IrContext, x: ir.Value, y: ir.Value) -> ir.Value:
    """pow(x, y) on f64 or vector-of-f64 operands: the regular path, and the general one when
    a lane needs it."""
    b, t = ctx.b, x.type
    it = ctx.int_type_of(t)
    ix = b.bitcast(x, it)
    abs_bits = b.and_(ix, ctx.const(it, (1 << 63) - 1))
    tiny = b.icmp_unsigned("<", abs_bits, ctx.const(it, 1 << 52))
    scaled = b.bitcast(b.fmul(ctx.fabs(x), ctx.f(t, 2.0**52)), it)
    bits = b.select(tiny, scaled, abs_bits)  # +-0, +-inf, NaN: any finite log; _annex_f rules
    lh, ll = _log_dd(ctx, bits, b.select(tiny, ctx.const(it, 52), ctx.const(it, 0)))
    ph = b.fmul(y, lh)
    pl = ctx.fma(y, ll, ctx.fma(y, lh, b.fneg(ph)))
    limit = ctx.f(t, _EXP_ARG_LIMIT)
    in_range = b.fcmp_ordered("<", ctx.fabs(ph), limit)
    tmp, table_bits, k = _exp_parts(
        ctx, b.select(in_range, ph, ctx.copysign(limit, ph)), b.select(in_range, pl, ctx.f(t, 0.0))
    )
    regular = b.and_(
        b.icmp_unsigned("<", b.sub(ix, ctx.const(it, 1 << 52)), ctx.const(it, 0x7FE << 52)),
        b.fcmp_ordered("<", ctx.fabs(ph), ctx.f(t, _REGULAR_LIMIT)),
    )
    scale = b.bitcast(b.add(table_bits, b.shl(k, ctx.const(it, 52 - tables.EXP_BITS))), t)
    fast = ctx.fma(scale, tmp, scale)
    entry = b.block
    general_block = b.append_basic_block("general")
    done = b.append_basic_block("done")
    b.cbranch(_all(ctx, regular), done, general_block)
    b.position_at_end(general_block)
    general = _annex_f(ctx, x, y, _scaled(ctx, tmp, table_bits, k))
    b.branch(done)
    b.position_at_end(done)
    result = b.phi(t)
    result.add_incoming(fast, entry)
    result.add_incoming(general, general_block)
    return result


def _annex_f(ctx: IrContext, x: ir.Value, y: ir.Value, r: ir.Value) -> ir.Value:
    """C99 Annex F's special cases around r = exp(y log|x|)."""
    b, t = ctx.b, x.type
    zero, one, inf = ctx.f(t, 0.0), ctx.f(t, 1.0), ctx.f(t, INF)
    ax, ay = ctx.fabs(x), ctx.fabs(y)
    y_finite = b.fcmp_ordered("<", ay, inf)
    is_int = b.and_(y_finite, b.fcmp_ordered("==", ctx.intrinsic("floor", y), y))
    half = b.fmul(y, ctx.f(t, 0.5))
    is_odd = b.and_(is_int, b.fcmp_ordered("!=", ctx.intrinsic("floor", half), half))
    it = ctx.int_type_of(t)
    x_negative = b.icmp_signed("<", b.bitcast(x, it), ctx.const(it, 0))
    # x = +-0, x = +-inf or y = +-inf: the magnitude is +inf or +0.
    x_finite_nonzero = b.and_(b.fcmp_ordered("<", ax, inf), b.fcmp_ordered(">", ax, zero))
    edge = b.or_(b.not_(x_finite_nonzero), b.fcmp_ordered("==", ay, inf))
    grows = b.xor(b.fcmp_ordered(">", ax, one), b.fcmp_ordered("<", y, zero))
    r = b.select(edge, b.select(grows, inf, zero), r)
    r = b.select(b.and_(x_negative, is_odd), b.fneg(r), r)
    finite_negative = b.and_(b.fcmp_ordered("<", x, zero), b.fcmp_ordered(">", x, ctx.f(t, -INF)))
    r = b.select(b.and_(finite_negative, b.and_(y_finite, b.not_(is_int))), ctx.f(t, NAN), r)
    r = b.select(b.and_(b.fcmp_ordered("==", ax, one), b.not_(y_finite)), one, r)  # (-1)**inf
    r = b.select(b.or_(ctx.is_nan(x), ctx.is_nan(y)), ctx.f(t, NAN), r)
    return b.select(b.or_(b.fcmp_ordered("==", y, zero), b.fcmp_ordered("==", x, one)), one, r)
