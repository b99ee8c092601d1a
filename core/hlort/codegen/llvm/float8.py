"""float8 (f8E4M3FN, f8E5M2) in LLVM: 1-byte storage, f32 registers, conversions as ml_dtypes.

The elemental emitter holds float8 values as f32, like f16/bf16, and rounds every op's f32
result back through the float8 type, exactly as the interpreter does (ml_dtypes computes in f32
and rounds once). The conversions here are branch-free bit manipulation, so loops over them
vectorize:

* float8 -> f32 is exact. Normal numbers re-bias the exponent with one integer add; subnormals
  are ``mantissa * 2**(1 - bias - m)`` (exact in f32). e5m2's infinities become f32
  infinities; NaN becomes a quiet f32 NaN of the same sign (below).
* f32 -> float8 rounds to nearest even. Normal results round the re-biased bits at the dropped
  mantissa bits (a carry into the exponent is right); subnormal results add the magic constant
  ``2**23 * q`` (q = the smallest subnormal) in f32, whose rounding is exactly RNE at q.
  Overflow (past the largest finite value after rounding) and infinities give NaN for
  f8E4M3FN, which has no infinities, and +-inf for f8E5M2. Every NaN becomes the canonical
  NaN of its sign (0x7F for e4m3fn, 0x7E for e5m2), as ml_dtypes produces it.

NaN payloads. f8E5M2 has three NaNs per sign (mantissa 01, 10, 11); ml_dtypes' conversions and
arithmetic make the canonical one (10), but data movement, select, copy, bitcast-convert,
reduce-precision and TOTALORDER compares keep or show the others. So a register keeps the
payload: an f8E5M2 NaN loads as the quiet f32 NaN ``0x7FC00000 | field << 20`` of its sign,
with field 0 for the canonical mantissa 10 (the f32 NaN any arithmetic makes turns into it)
and the mantissa itself for 01 and 11; a store writes the payload back
(``keep_nan_payload``). Arithmetic propagates an operand's NaN payload in f32, so every op's
result is canonicalized by ``round_f32_to_float8`` (the default), except the ops in
:func:`keeps_nan_payload`, whose results the interpreter leaves as they are.
"""

from __future__ import annotations

import struct

import llvmlite.ir as ir
import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass

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
    subnormal_value = b.fmul(
        b.uitofp(magnitude, _F32), ir.Constant(_F32, 2.0 ** (1 - fmt.bias - m))
    )
    subnormal = b.bitcast(subnormal_value, _I32)
    is_subnormal = b.icmp_unsigned("<", magnitude, _c(1 << m))
    result = b.select(is_subnormal, subnormal, normal)
    if fmt.has_inf:
        special = b.icmp_unsigned(">=", magnitude, _c(fmt.exponent_all_ones))
        is_inf = b.icmp_unsigned("==", magnitude, _c(fmt.exponent_all_ones))
        payload = b.and_(magnitude, _c((1 << m) - 1))  # 01 -> 01, 10 -> 00, 11 -> 11
        field = b.and_(payload, b.or_(b.shl(payload, _c(1)), _c(1)))
        nan = b.or_(b.shl(field, _c(22 - m)), _c(_F32_NAN))
        result = b.select(special, b.select(is_inf, _c(_F32_INF), nan), result)
    else:
        result = b.select(b.icmp_unsigned("==", magnitude, _c(fmt.nan)), _c(_F32_NAN), result)
    return b.bitcast(b.or_(result, sign), _F32)


def f32_to_float8(
    b: ir.IRBuilder, dtype: DType, value: ir.Value, keep_nan_payload: bool = False
) -> ir.Value:
    """f32 -> float8 bits (i8), rounded to nearest even exactly as ml_dtypes rounds. NaN gives
    the canonical NaN of its sign, or with ``keep_nan_payload`` the f8E5M2 NaN whose payload
    the register holds (see the module docstring)."""
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
    nan: ir.Value = _c(fmt.nan)
    if keep_nan_payload and fmt.has_inf:
        field = b.and_(b.lshr(magnitude, _c(22 - m)), _c((1 << m) - 1))
        canonical = b.icmp_unsigned("==", field, _c(0))
        payload = b.select(canonical, _c(fmt.nan & ((1 << m) - 1)), field)
        nan = b.or_(payload, _c(fmt.exponent_all_ones))
    result = b.select(is_nan, nan, result)
    return b.trunc(b.or_(result, sign), _I8)


def round_f32_to_float8(
    b: ir.IRBuilder, dtype: DType, value: ir.Value, keep_nan_payload: bool = False
) -> ir.Value:
    """An f32 value rounded to ``dtype`` and held as f32 again; NaN canonical unless asked."""
    return float8_to_f32(b, dtype, f32_to_float8(b, dtype, value, keep_nan_payload))


def canonical_float8_nan(b: ir.IRBuilder, dtype: DType, value: ir.Value) -> ir.Value:
    """A float8 register value with its NaN made the canonical f32 NaN of its sign, as
    ml_dtypes converts any float8 NaN to another type."""
    if not FORMATS[dtype.name].has_inf:
        return value
    bits = b.bitcast(value, _I32)
    canonical = b.or_(b.and_(bits, _c(0x80000000)), _c(_F32_NAN))
    is_nan = b.icmp_unsigned(">", b.and_(bits, _c(0x7FFFFFFF)), _c(_F32_INF))
    return b.bitcast(b.select(is_nan, canonical, bits), _F32)


def float8_register_constant(dtype: DType, value) -> float:
    """The f32 register value of a float8 constant, NaN payload included (as a Python float)."""
    raw = int(np.asarray(value).astype(dtype.numpy).reshape(-1)[0:1].view(np.uint8)[0])
    fmt = FORMATS[dtype.name]
    m = fmt.mantissa_bits
    magnitude = raw & 0x7F
    if not fmt.has_inf or magnitude <= fmt.exponent_all_ones:
        return float(np.asarray(value).astype(dtype.numpy).astype(np.float32))
    payload = magnitude & ((1 << m) - 1)
    field = payload & ((payload << 1) | 1)
    bits = (raw & 0x80) << 24 | _F32_NAN | field << (22 - m)
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def float8_nan_bits(dtype: DType) -> tuple[int, int]:
    """(largest magnitude bits that are not NaN, canonical NaN magnitude bits) of ``dtype``."""
    fmt = FORMATS[dtype.name]
    return (fmt.exponent_all_ones if fmt.has_inf else fmt.max_finite), fmt.nan


def keeps_nan_payload(instr: Instruction) -> bool:
    """Whether the interpreter's result of elementwise ``instr`` keeps an operand's NaN as it
    is (data movement in effect): then the emitter must not canonicalize an f8E5M2 NaN (nor
    quiet a bf16 one: llvm_types.round_to)."""
    op = instr.opcode
    if op in (
        Opcode.SELECT,
        Opcode.COPY,
        Opcode.OPTIMIZATION_BARRIER,
        Opcode.REAL,
        Opcode.BITCAST_CONVERT,
        Opcode.REDUCE_PRECISION,
        Opcode.NEGATE,  # sign-bit operations (IEEE 754 5.5.1): the payload stays
        Opcode.ABS,
    ):
        return True
    return op is Opcode.CONVERT and instr.operands[0].shape.dtype is instr.shape.dtype
