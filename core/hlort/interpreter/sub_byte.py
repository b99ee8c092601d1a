"""s4/u4 in the interpreter: 4-bit integers computed in a byte and wrapped back to 4 bits.

NumPy holds ``ml_dtypes.int4``/``uint4`` one per byte, but its ufuncs on them are uneven (some
wrap in 4 bits, some return int8). So an op function never sees a 4-bit array: :func:`adapt`
wraps the function of every op that computes on values (arithmetic, bitwise, compare, shifts,
popcnt, clz) so that its 4-bit operands arrive as bytes and its 4-bit result is the
low 4 bits of the byte result, which is exactly two's-complement 4-bit arithmetic for +, -, *,
/, %, bitwise ops, min/max and power (each is exact or congruent modulo 16). Where the bit width
itself matters the operand is widened by its bits instead of its value:

- shift-right-logical, popcnt, clz: the 4 bits zero-extended (s4 -1 is 0b1111: srl by 1 is 7,
  popcnt is 4; clz counts in 8 bits, minus 4);
- shift-right-arithmetic: the 4 bits sign-extended, for u4 too (XLA's AShr on the bit pattern).

Shift amounts of 4 or more then shift every bit out, as they must. Ops that only move elements
(reshape, slice, gather, ...) and dot/convolution (which accumulate in int64 and wrap on the way
out) take 4-bit arrays as they are; convert and bitcast-convert are in ops/conversions.py.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape

_SUB_BYTE_NAMES = ("int4", "uint4")


def is_sub_byte(dtype: np.dtype) -> bool:
    """Whether a NumPy dtype is ml_dtypes' int4 or uint4 (by name: no ml_dtypes import)."""
    return dtype.name in _SUB_BYTE_NAMES


def widen(x: np.ndarray) -> np.ndarray:
    """4-bit values in a byte: int4 -> int8 (sign-extended), uint4 -> uint8."""
    return x.astype(np.int8 if x.dtype.name == "int4" else np.uint8)


def low_bits(x: np.ndarray) -> np.ndarray:
    """The 4 bits of each element, zero-extended into uint8 (0..15)."""
    return widen(x).view(np.uint8) & np.uint8(0xF) if x.dtype.name == "int4" else widen(x)


def sign_extended_bits(x: np.ndarray) -> np.ndarray:
    """The 4 bits of each element read as a signed 4-bit value, in int8 (-8..7)."""
    bits = low_bits(x).astype(np.int8)
    return (bits ^ np.int8(8)) - np.int8(8)


def from_low_bits(x: np.ndarray, to: np.dtype) -> np.ndarray:
    """The low 4 bits of integer array ``x`` as ``to`` (int4 or uint4)."""
    bits = np.asarray(x).astype(np.int64, copy=False) & 0xF
    if to.name == "int4":
        bits = (bits ^ 8) - 8
    return np.asarray(bits.astype(to))


# How each op's 4-bit operands are widened: by value, or by their bits (zero- / sign-extended).
VALUE, ZERO_EXTENDED, SIGN_EXTENDED = "value", "zero-extended", "sign-extended"
_FIRST_OPERAND = {
    Opcode.SHIFT_RIGHT_LOGICAL: ZERO_EXTENDED,
    Opcode.POPCNT: ZERO_EXTENDED,
    Opcode.CLZ: ZERO_EXTENDED,
    Opcode.SHIFT_RIGHT_ARITHMETIC: SIGN_EXTENDED,
}
ADAPTED_OPCODES = frozenset(
    {
        Opcode.ADD,
        Opcode.SUBTRACT,
        Opcode.MULTIPLY,
        Opcode.DIVIDE,
        Opcode.REMAINDER,
        Opcode.POWER,
        Opcode.MAXIMUM,
        Opcode.MINIMUM,
        Opcode.AND,
        Opcode.OR,
        Opcode.XOR,
        Opcode.NOT,
        Opcode.NEGATE,
        Opcode.ABS,
        Opcode.SIGN,
        Opcode.COMPARE,
        Opcode.SELECT,
        Opcode.CLAMP,
        Opcode.SHIFT_LEFT,
        *_FIRST_OPERAND,
    }
)
_BY_VALUE = {"s4": dtypes.S8, "u4": dtypes.U8}
_BY_BITS = {ZERO_EXTENDED: dtypes.U8, SIGN_EXTENDED: dtypes.S8}


def _is_sub_byte_shape(shape) -> bool:
    return isinstance(shape, ArrayShape) and shape.dtype.is_sub_byte_integer


def needs_adapter(instr) -> bool:
    """Whether ``instr`` computes on 4-bit values (its operands or its result)."""
    if instr.opcode not in ADAPTED_OPCODES:
        return False
    return _is_sub_byte_shape(instr.shape) or any(
        _is_sub_byte_shape(o.shape) for o in instr.operands
    )


class _WidenedInstruction:
    """``instr`` as the op function should see it: the same op with a byte-wide result type."""

    __slots__ = ("_instr", "shape")

    def __init__(self, instr, shape):
        self._instr = instr
        self.shape = shape

    def __getattr__(self, name):
        return getattr(self._instr, name)


def adapt(instr, fn):
    """The op function for ``instr`` computing in bytes (see the module docstring)."""
    first = _FIRST_OPERAND.get(instr.opcode, VALUE)
    result = instr.shape
    widened = result
    if _is_sub_byte_shape(result):  # by bits: the result has the first operand's byte type
        wide = _BY_VALUE[result.dtype.name] if first is VALUE else _BY_BITS[first]
        widened = result.with_dtype(wide)
    view = _WidenedInstruction(instr, widened)
    to = result.dtype.numpy if widened is not result else None
    clz = instr.opcode is Opcode.CLZ

    def run(ev, _instr, *values):
        args = []
        for i, v in enumerate(values):
            if isinstance(v, np.ndarray) and is_sub_byte(v.dtype):
                if i == 0 and first is ZERO_EXTENDED:
                    v = low_bits(v)
                elif i == 0 and first is SIGN_EXTENDED:
                    v = sign_extended_bits(v)
                else:
                    v = widen(v)
            args.append(v)
        out = fn(ev, view, *args)
        if to is None:
            return out
        if clz:  # counted in 8 bits, of which the top 4 are zero
            out = np.asarray(out).astype(np.int64) - 4
        return from_low_bits(out, to)

    return run
