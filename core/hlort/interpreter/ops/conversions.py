"""Interpreter: convert, bitcast-convert and reduce-precision.

convert follows XLA: float -> integer truncates toward zero, saturates out-of-range values to the
type's min/max and maps NaN to 0; anything -> pred is ``x != 0`` (NaN -> true); pred -> number
is 0/1; integer -> integer wraps; every rounding to a float type is one round-to-nearest-even of
the exact value (see float_rounding). complex -> real keeps the real part (StableHLO; XLA's
shape inference accepts it and its evaluator takes the real part too). s4/u4 convert as the byte
integers holding their values (float -> s4 saturates to [-8, 7]; integer -> s4 wraps).

bitcast-convert of s4/u4 packs two elements per byte, element 0 in the low nibble (XLA's CPU:
s4[2] {1, 2} -> u8 0x21), so s4[..., 2] <-> s8/u8[...] and s4[..., 8] <-> f32[...].
"""

from __future__ import annotations

import numpy as np

from hlort.dtypes import F8E4M3FN, finfo, from_numpy, iinfo
from hlort.interpreter.ops.float_rounding import (
    C64,
    F32,
    F64,
    NARROW_FLOATS,
    float_from_f64,
    float_from_int,
    is_ml_dtype,
)
from hlort.interpreter.registry import evaluates
from hlort.interpreter.sub_byte import from_low_bits, is_sub_byte, low_bits, widen
from hlort.ir.opcodes import Opcode


def float_to_int(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """Truncate toward zero; NaN -> 0; saturate to [min, max] of ``to`` (XLA's convert)."""
    info = iinfo(from_numpy(to))
    with np.errstate(all="ignore"):
        t = np.trunc(x.astype(F64))  # the upcast is exact for every float type
        if to.itemsize <= 4:  # both bounds are exact in f64: clip, then NaN -> 0
            r = np.clip(t, float(info.min), float(info.max))
            return np.asarray(np.where(np.isnan(r), 0.0, r).astype(to))
        nan = np.isnan(t)
        low = t <= float(info.min)
        high = t >= float(info.max)  # float(2**63 - 1) is 2**63: out of range, as it should be
        r = np.where(nan | low | high, 0.0, t).astype(to)
    r = np.where(low, to.type(info.min), r)
    r = np.where(high, to.type(info.max), r)
    return np.asarray(np.where(nan, to.type(0), r), dtype=to)


def convert_array(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """Elementwise conversion of ``x`` to the NumPy dtype ``to`` with XLA's semantics."""
    src = x.dtype
    if src == to:
        return np.array(x, copy=True)
    if is_sub_byte(src):
        return convert_array(widen(x), to)
    if is_sub_byte(to) and not from_numpy(src).is_floating_or_complex:
        wide = np.int8 if to.name == "int4" else np.uint8
        return from_low_bits(convert_array(x, np.dtype(wide)), to)
    if to == np.bool_:
        return np.asarray((x.astype(F32) if src in NARROW_FLOATS else x) != 0)
    if src.kind == "c" and to.kind != "c":
        x = np.real(x)
        return np.array(x, copy=True) if x.dtype == to else convert_array(x, to)
    if src == np.bool_:
        x, src = x.astype(np.uint8), np.dtype(np.uint8)
    if to.kind in "iu" or is_sub_byte(to):
        if from_numpy(src).is_float:
            return float_to_int(x, to)
        return np.asarray(x.astype(to))
    if to.kind == "c":
        if src.kind == "c":
            return np.asarray(x.astype(to))
        return np.asarray(convert_array(x, F32 if to == C64 else F64).astype(to))
    if src.kind in "iu":
        return float_from_int(x, to)
    if src == F32 or src in NARROW_FLOATS:  # exact in f32, so rounding from f32 rounds once
        return np.asarray(x.astype(F32).astype(to))
    return float_from_f64(x.astype(F64), to)


@evaluates(Opcode.CONVERT)
def _convert(ev, instr, x):
    with np.errstate(all="ignore"):  # overflow to inf/NaN is the intended IEEE result
        return convert_array(x, instr.shape.dtype.numpy)


@evaluates(Opcode.BITCAST_CONVERT)
def _bitcast_convert(ev, instr, x):
    """Reinterpret bytes (little-endian host order): a narrower type adds a trailing dim of the
    width ratio, a wider one consumes it."""
    to = instr.shape.dtype.numpy
    if is_sub_byte(x.dtype) or is_sub_byte(to):
        return _bitcast_sub_byte(x, to)
    xc = x if x.flags.c_contiguous else x.copy(order="C")
    if xc.dtype.itemsize == to.itemsize:
        return xc.view(to)
    if xc.dtype.itemsize > to.itemsize:
        return xc.reshape(xc.shape + (1,)).view(to)
    return xc.view(to).reshape(xc.shape[:-1])


def _bitcast_sub_byte(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """bitcast-convert from or to s4/u4: nibbles, element 0 in the low nibble of each byte."""
    if is_sub_byte(x.dtype) and is_sub_byte(to):
        return from_low_bits(low_bits(x), to)
    if is_sub_byte(x.dtype):  # s4[..., 2k] -> a k-byte type
        nib = low_bits(x).reshape(x.shape[:-1] + (x.shape[-1] // 2, 2))
        packed = np.ascontiguousarray(nib[..., 0] | (nib[..., 1] << np.uint8(4)))
        return packed.view(to).reshape(x.shape[:-1])
    xc = np.require(x, requirements="C")  # a k-byte type -> s4[..., 2k] (0-d stays 0-d)
    raw = xc.reshape(xc.shape + (1,)).view(np.uint8)
    nib = np.stack([raw & np.uint8(0xF), raw >> np.uint8(4)], axis=-1)
    return from_low_bits(nib.reshape(xc.shape + (2 * xc.dtype.itemsize,)), to)


def reduce_precision_bits(x: np.ndarray, exponent_bits: int, mantissa_bits: int) -> np.ndarray:
    """XLA's reduce-precision on the bits of an IEEE-style float (f16, bf16, f32, f64, f8e5m2).

    Mantissa: round to nearest even at ``mantissa_bits`` (a carry into the exponent is right).
    Exponent: values above the reduced range become +-inf, values at or below its smallest normal
    exponent become +-0 (XLA flushes the reduced format's subnormals). NaN stays NaN, unless there
    are no mantissa bits to hold it, where it becomes +inf as in XLA.
    """
    nbits = x.dtype.itemsize * 8
    u = np.dtype(f"u{x.dtype.itemsize}")
    src_mantissa = int(finfo(from_numpy(x.dtype)).nmant)
    src_exponent = nbits - 1 - src_mantissa
    ones = (1 << nbits) - 1
    sign_mask = 1 << (nbits - 1)
    exp_mask = ((1 << src_exponent) - 1) << src_mantissa
    bits = (x if x.flags.c_contiguous else x.copy(order="C")).view(u)
    is_nan = (bits & u.type(ones ^ sign_mask)) > u.type(exp_mask)
    with np.errstate(all="ignore"):
        if mantissa_bits < src_mantissa:
            shift = src_mantissa - mantissa_bits
            last = 1 << shift
            bias = ((bits & u.type(last)) >> u.type(shift)) + u.type((last >> 1) - 1)
            bits = (bits + bias) & u.type(ones ^ (last - 1))
        if exponent_bits < src_exponent:
            exponent_bias = (1 << (src_exponent - 1)) - 1
            reduced_bias = (1 << (exponent_bits - 1)) - 1
            exponent = bits & u.type(exp_mask)
            overflow = exponent > u.type((exponent_bias + reduced_bias) << src_mantissa)
            underflow = exponent <= u.type((exponent_bias - reduced_bias) << src_mantissa)
            signed_zero = bits & u.type(sign_mask)
            bits = np.where(overflow, signed_zero | u.type(exp_mask), bits)
            bits = np.where(underflow, signed_zero, bits)
    result = np.asarray(bits, dtype=u).view(x.dtype)
    nan_value = x if mantissa_bits > 0 else np.array(np.inf, dtype=x.dtype)
    return np.asarray(np.where(is_nan, nan_value, result), dtype=x.dtype)


@evaluates(Opcode.REDUCE_PRECISION)
def _reduce_precision(ev, instr, x):
    e, m = instr.attrs["exponent_bits"], instr.attrs["mantissa_bits"]
    if is_ml_dtype(x.dtype, F8E4M3FN):  # no inf and one NaN pattern: not IEEE-style, so work in f32
        with np.errstate(all="ignore"):
            return np.asarray(reduce_precision_bits(x.astype(F32), e, m).astype(x.dtype))
    return reduce_precision_bits(x, e, m)
