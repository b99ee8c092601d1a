"""float8 (f8E4M3FN, f8E5M2) in LLVM: 1-byte storage, f32 registers, conversions as ml_dtypes.

The elemental emitter holds float8 values as f32, like f16/bf16, and rounds every op's f32
result back through the float8 type, exactly as the interpreter does (ml_dtypes computes in f32
and rounds once). The conversions here are branch-free bit manipulation, so loops over them
vectorize:

* float8 -> f32 is exact. Normal numbers re-bias the exponent with one integer add; subnormals
  are ``mantissa * 2**(1 - bias - m)`` (exact in f32). NaN becomes the canonical quiet f32 NaN
  of the same sign and e5m2's infinities become f32 infinities, as ml_dtypes converts them.
* f32 -> float8 rounds to nearest even. Normal results round the re-biased bits at the dropped
  mantissa bits (a carry into the exponent is right); subnormal results add the magic constant
  ``2**23 * q`` (q = the smallest subnormal) in f32, whose rounding is exactly RNE at q.
  Overflow (past the largest finite value after rounding) and infinities give NaN for
  f8E4M3FN, which has no infinities, and +-inf for f8E5M2. Every NaN becomes the canonical
  NaN of its sign (0x7F for e4m3fn, 0x7E for e5m2), as ml_dtypes produces it.

Registers hold canonical NaNs, as ml_dtypes' own conversions do, so an f8E5M2 NaN with another
payload (0x7D, 0x7F, 0xFD, 0xFF) loses it in a register: the ops that would show the payload
(bitcast-convert, TOTALORDER compare, reduce-precision) stay on the interpreter for f8E5M2, and
such a NaN copied through a fused loop (select, slice, concatenate...) comes out as the
canonical NaN of its sign. Kernels that move raw bytes (transpose, sort) keep it.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.dtypes import DType
from hlort.ir.attributes import ComparisonType
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import comparison_type_of

_I8 = ir.IntType(8)
_I32 = ir.IntType(32)
_F32 = ir.FloatType()
_F32_NAN = 0x7FC00000
_F32_INF = 0x7F800000


@dataclass(frozen=True)
class Float8Format:
    """Bit layout of one float8 type and how it encodes its special values."""

    mantissa_bits: int
    bias: int
    has_inf: bool
    max_finite: int  # magnitude bits of the largest finite value
    overflow: int  # magnitude bits of what overflow rounds to (NaN or inf)
    nan: int  # magnitude bits of the canonical NaN

    @property
    def exponent_all_ones(self) -> int:
        return ((0x7F >> self.mantissa_bits) << self.mantissa_bits) & 0x7F


FORMATS: dict[str, Float8Format] = {
    dtypes.F8E4M3FN.name: Float8Format(3, 7, False, 0x7E, 0x7F, 0x7F),
    dtypes.F8E5M2.name: Float8Format(2, 15, True, 0x7B, 0x7C, 0x7E),
}
FLOAT8_DTYPES: tuple[DType, ...] = (dtypes.F8E4M3FN, dtypes.F8E5M2)


def is_float8(dtype: DType) -> bool:
    return dtype.name in FORMATS


def _c(value: int) -> ir.Constant:
    return ir.Constant(_I32, value)


def float8_to_f32(b: ir.IRBuilder, dtype: DType, raw: ir.Value) -> ir.Value:
    """The exact f32 value of the float8 bits ``raw`` (i8)."""
    fmt = FORMATS[dtype.name]
    m = fmt.mantissa_bits
    bits = b.zext(raw, _I32)
    sign = b.shl(b.and_(bits, _c(0x80)), _c(24))
    magnitude = b.and_(bits, _c(0x7F))
    normal = b.add(b.shl(magnitude, _c(23 - m)), _c((127 - fmt.bias) << 23))
    subnormal_value = b.fmul(b.uitofp(magnitude, _F32),
                             ir.Constant(_F32, 2.0 ** (1 - fmt.bias - m)))  # fmt: skip
    subnormal = b.bitcast(subnormal_value, _I32)
    is_subnormal = b.icmp_unsigned("<", magnitude, _c(1 << m))
    result = b.select(is_subnormal, subnormal, normal)
    if fmt.has_inf:
        special = b.icmp_unsigned(">=", magnitude, _c(fmt.exponent_all_ones))
        is_inf = b.icmp_unsigned("==", magnitude, _c(fmt.exponent_all_ones))
        result = b.select(special, b.select(is_inf, _c(_F32_INF), _c(_F32_NAN)), result)
    else:
        result = b.select(b.icmp_unsigned("==", magnitude, _c(fmt.nan)), _c(_F32_NAN), result)
    return b.bitcast(b.or_(result, sign), _F32)


def f32_to_float8(b: ir.IRBuilder, dtype: DType, value: ir.Value) -> ir.Value:
    """f32 -> float8 bits (i8), rounded to nearest even exactly as ml_dtypes rounds."""
    fmt = FORMATS[dtype.name]
    m = fmt.mantissa_bits
    shift = 23 - m
    bits = b.bitcast(value, _I32)
    magnitude = b.and_(bits, _c(0x7FFFFFFF))
    sign = b.and_(b.lshr(bits, _c(24)), _c(0x80))
    # normal results: re-bias, then round the dropped bits to nearest even
    rebiased = b.sub(magnitude, _c((127 - fmt.bias) << 23))
    odd = b.and_(b.lshr(rebiased, _c(shift)), _c(1))
    rounded = b.lshr(b.add(rebiased, b.add(odd, _c((1 << (shift - 1)) - 1))), _c(shift))
    overflow = b.icmp_unsigned(">", rounded, _c(fmt.max_finite))
    normal = b.select(overflow, _c(fmt.overflow), rounded)
    # subnormal results (and rounding up into the smallest normal): RNE by the f32 adder
    magic = 2.0 ** (24 - fmt.bias - m)
    absolute = b.bitcast(magnitude, _F32)
    summed = b.bitcast(b.fadd(absolute, ir.Constant(_F32, magic)), _I32)
    subnormal = b.sub(summed, b.bitcast(ir.Constant(_F32, magic), _I32))
    is_small = b.icmp_unsigned("<", magnitude, _c((128 - fmt.bias) << 23))
    result = b.select(is_small, subnormal, normal)
    is_nan = b.icmp_unsigned(">", magnitude, _c(_F32_INF))
    result = b.select(is_nan, _c(fmt.nan), result)
    return b.trunc(b.or_(result, sign), _I8)


def round_f32_to_float8(b: ir.IRBuilder, dtype: DType, value: ir.Value) -> ir.Value:
    """An f32 value rounded to ``dtype`` and held as f32 again."""
    return float8_to_f32(b, dtype, f32_to_float8(b, dtype, value))



def float8_nan_bits(dtype: DType) -> tuple[int, int]:
    """(largest magnitude bits that are not NaN, canonical NaN magnitude bits) of ``dtype``."""
    fmt = FORMATS[dtype.name]
    return (fmt.exponent_all_ones if fmt.has_inf else fmt.max_finite), fmt.nan


def float8_can_emit(instr: Instruction) -> bool:
    """False for the ops that would show an f8E5M2 NaN's payload (bitcast-convert, TOTALORDER
    compare, reduce-precision): registers hold canonical NaNs, so those stay on the interpreter."""
    types = [instr.shape] + [o.shape for o in instr.operands]
    if not any(getattr(s, "dtype", None) is dtypes.F8E5M2 for s in types):
        return True
    if instr.opcode in (Opcode.BITCAST_CONVERT, Opcode.REDUCE_PRECISION):
        return False
    if instr.opcode is Opcode.COMPARE:
        return comparison_type_of(instr) is not ComparisonType.TOTALORDER
    return True
