"""Element types in LLVM: how each hlort type is stored in memory and held in registers.

Storage types are the bytes NumPy uses (pred is one byte; s4/u4 are one byte each, the value in
the low nibble and the high nibble zero, as ml_dtypes holds them). Register ("value") types are
what the elemental emitter computes with: pred is i1, integers are iN (s4/u4 are i4: a load
truncates the byte, a store zero-extends it; signedness lives in the DType),
f32/f64 are float/double, and f16/bf16 are held as f32, exactly as XLA upcasts them; each op on a
narrow type rounds its f32 result back through the narrow type, so a fused chain rounds after
every op like the interpreter does. float8 types are stored as bytes and held as f32 the same
way (float8.py; an f8E5M2 NaN keeps its payload in the register). c64/c128 are a struct of two
parts in memory and in registers (complex_types.py; their ops: complex_values.py);
``is_compiled_dtype`` leaves them out: only the elemental emitter and the kernels that move or
combine elements take them.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm.complex_types import complex_constant, complex_type
from hlort.codegen.llvm.float8 import (
    f32_to_float8,
    float8_register_constant,
    float8_to_f32,
    is_float8,
    round_f32_to_float8,
)
from hlort.dtypes import DType
from hlort.errors import Unimplemented

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()
F64 = ir.DoubleType()
HALF = ir.HalfType()
PTR = ir.PointerType()
VOID = ir.VoidType()

NARROW = (dtypes.F16, dtypes.BF16, dtypes.F8E4M3FN, dtypes.F8E5M2)  # held as f32 (float8.py)
COMPILED_DTYPES = frozenset(d.name for d in dtypes.ALL_DTYPES if not d.is_complex)


def is_compiled_dtype(dtype: DType) -> bool:
    return dtype.name in COMPILED_DTYPES


def _check(dtype: DType) -> None:
    if not is_compiled_dtype(dtype) and not dtype.is_complex:  # complex: complex_values.py
        raise Unimplemented(f"the LLVM emitter does not compile element type {dtype}")


def value_type(dtype: DType) -> ir.Type:
    """The register type of ``dtype`` (f32 for f16/bf16)."""
    _check(dtype)
    if dtype.is_complex:
        return complex_type(dtype)
    if dtype.is_pred:
        return I1
    if dtype.is_integer:
        return ir.IntType(dtype.bits)
    if dtype is dtypes.F64:
        return F64
    return F32


def storage_type(dtype: DType) -> ir.Type:
    """The in-memory element type."""
    _check(dtype)
    if dtype.is_complex:
        return value_type(dtype)
    if dtype.is_pred or dtype.is_sub_byte_integer:
        return I8
    if dtype.is_integer:
        return ir.IntType(dtype.bits)
    if is_float8(dtype):
        return I8
    return {dtypes.F16: HALF, dtypes.BF16: I16, dtypes.F32: F32, dtypes.F64: F64}[dtype]


def load_element(b: ir.IRBuilder, dtype: DType, base: ir.Value, index: ir.Value) -> ir.Value:
    """Load element ``index`` of an array of ``dtype`` at ``base`` as a register value."""
    st = storage_type(dtype)
    raw = b.load(b.gep(base, [index], inbounds=True, source_etype=st), typ=st)
    return from_storage(b, dtype, raw)


def store_element(
    b: ir.IRBuilder, dtype: DType, value: ir.Value, base: ir.Value, index: ir.Value
) -> None:
    st = storage_type(dtype)
    b.store(to_storage(b, dtype, value), b.gep(base, [index], inbounds=True, source_etype=st))


def from_storage(b: ir.IRBuilder, dtype: DType, raw: ir.Value) -> ir.Value:
    if dtype.is_pred:
        return b.icmp_unsigned("!=", raw, ir.Constant(I8, 0))
    if dtype.is_sub_byte_integer:
        return b.trunc(raw, ir.IntType(dtype.bits))
    if dtype is dtypes.F16:
        return b.fpext(raw, F32)
    if dtype is dtypes.BF16:
        return b.bitcast(b.shl(b.zext(raw, I32), ir.Constant(I32, 16)), F32)
    if is_float8(dtype):
        return float8_to_f32(b, dtype, raw)
    return raw


def to_storage(b: ir.IRBuilder, dtype: DType, value: ir.Value) -> ir.Value:
    if dtype.is_pred or dtype.is_sub_byte_integer:  # s4 too: the high nibble stays zero
        return b.zext(value, I8)
    if dtype is dtypes.F16:
        return b.fptrunc(value, HALF)
    if dtype is dtypes.BF16:
        return bf16_bits(b, value)
    if is_float8(dtype):
        return f32_to_float8(b, dtype, value, keep_nan_payload=True)
    return value


def bf16_bits(b: ir.IRBuilder, value: ir.Value, keep_nan_payload: bool = True) -> ir.Value:
    """f32 -> bf16 bits, rounding to nearest even. A NaN keeps its sign and high payload bits,
    signaling ones too, so a bf16 load then store gives the same bits (data movement); it is
    made quiet (as IEEE arithmetic and conversions do) unless ``keep_nan_payload``, and always
    where its payload was only in the low half (else it would truncate to infinity)."""
    high = b.lshr(b.bitcast(value, I32), ir.Constant(I32, 16))
    lsb = b.and_(high, ir.Constant(I32, 1))
    bits = b.bitcast(value, I32)
    rounded = b.lshr(b.add(bits, b.add(lsb, ir.Constant(I32, 0x7FFF))), ir.Constant(I32, 16))
    quiet = b.or_(high, ir.Constant(I32, 0x40))
    if keep_nan_payload:
        payload = b.icmp_unsigned("!=", b.and_(high, ir.Constant(I32, 0x7F)), ir.Constant(I32, 0))
        quiet = b.select(payload, high, quiet)
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, quiet, rounded), I16)


def round_to(
    b: ir.IRBuilder, dtype: DType, value: ir.Value, keep_nan_payload: bool = False
) -> ir.Value:
    """An f32 value rounded to ``dtype`` and held as f32 again (identity for f32/f64/ints).
    A float8 NaN becomes canonical, a bf16 NaN quiet, unless ``keep_nan_payload`` (float8.py)."""
    if is_float8(dtype):
        return round_f32_to_float8(b, dtype, value, keep_nan_payload)
    if dtype is dtypes.BF16:
        return from_storage(b, dtype, bf16_bits(b, value, keep_nan_payload))
    if dtype in NARROW:
        return from_storage(b, dtype, to_storage(b, dtype, value))
    return value


def constant(dtype: DType, value) -> ir.Constant:
    """A register constant of ``dtype`` (NumPy scalar or Python number)."""
    import numpy as np

    if dtype.is_complex:
        return complex_constant(dtype, value)
    vt = value_type(dtype)
    if dtype.is_pred:
        return ir.Constant(I1, int(bool(value)))
    if dtype.is_integer:
        return ir.Constant(vt, int(np.asarray(value).astype(dtype.numpy)) & ((1 << dtype.bits) - 1))
    if is_float8(dtype):
        return ir.Constant(vt, float8_register_constant(dtype, value))
    v = float(np.asarray(value).astype(dtype.numpy).astype(np.float64))
    return ir.Constant(vt, v)
