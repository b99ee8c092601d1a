"""Interpreter: integer division, remainder and power, shifts, popcnt and count-leading-zeros.

XLA defines every integer op for every input (no undefined behaviour, no traps), and so does the
interpreter:
  x / 0 = -1 (all bits set: UINT_MAX for unsigned), INT_MIN / -1 = INT_MIN, division truncates;
  x % 0 = x, INT_MIN % -1 = 0, the remainder takes the dividend's sign;
  x ** n wraps; for signed n < 0 it is 1 when x == 1 and 0 otherwise (XLA's HloEvaluator and
  emitter: (-1) ** -1 is 0, not -1); x ** 0 = 1;
  shift amounts are read as unsigned, and amounts >= the bit width shift everything out (0, or
  the sign fill for an arithmetic right shift).
Everything is vectorized; loops run over bit positions (at most 64), never over elements.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode


def unsigned_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"u{dtype.itemsize}")


def signed_of(dtype: np.dtype) -> np.dtype:
    return np.dtype(f"i{dtype.itemsize}")


def divide_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dt = a.dtype
    with np.errstate(all="ignore"):
        zero = b == 0
        if dt.kind == "u":
            q = a // np.where(zero, dt.type(1), b)
            return np.asarray(np.where(zero, np.iinfo(dt).max, q), dtype=dt)
        low = np.iinfo(dt).min
        overflow = (a == low) & (b == -1)
        safe = np.where(zero | overflow, dt.type(1), b)
        r = np.fmod(a, safe)  # C remainder: truncated division, sign of the dividend
        q = (a - r) // safe  # exact, so floor division is truncation here
        q = np.where(overflow, dt.type(low), q)
        return np.asarray(np.where(zero, dt.type(-1), q), dtype=dt)


def remainder_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dt = a.dtype
    with np.errstate(all="ignore"):
        zero = b == 0
        unsafe = zero
        if dt.kind == "i":
            unsafe = zero | ((a == np.iinfo(dt).min) & (b == -1))  # INT_MIN % -1 -> 0 via % 1
        r = np.fmod(a, np.where(unsafe, dt.type(1), b))
        return np.asarray(np.where(zero, a, r), dtype=dt)


def power_int(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exponentiation by squaring over the exponent's bits, wrapping like the hardware does."""
    dt = a.dtype
    a, b = np.broadcast_arrays(a, b)
    exponent = np.array(b, dtype=dt).view(unsigned_of(dt))
    one = dt.type(1)
    acc = np.ones(a.shape, dtype=dt)
    base = np.array(a, dtype=dt)
    with np.errstate(all="ignore"):
        for _ in range(dt.itemsize * 8):
            if not exponent.any():
                break
            acc = np.where((exponent & 1) != 0, acc * base, acc)
            base = base * base
            exponent = exponent >> 1
        if dt.kind == "i":
            acc = np.where(b < 0, np.where(a == one, one, dt.type(0)), acc)
    return np.asarray(acc, dtype=dt)


def _shift_amounts(x: np.ndarray, amount: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(out of range, amount clamped to [0, bits)) with the amount read as unsigned; the mask
    is None when every amount is in range (the common case: one NumPy shift, nothing else)."""
    u = unsigned_of(x.dtype)
    amount_u = np.asarray(amount).view(u)
    out_of_range = amount_u >= x.dtype.itemsize * 8
    if not out_of_range.any():
        return None, amount_u
    return out_of_range, np.where(out_of_range, u.type(0), amount_u).astype(u)


def _logical_shift(shift: np.ufunc, x: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """``shift`` of the bit pattern of ``x`` as unsigned; shifting by the width or more gives 0."""
    u = unsigned_of(x.dtype)
    big, s = _shift_amounts(x, amount)
    r = shift(x.view(u), s)
    if big is not None:
        r = np.where(big, u.type(0), r)
    return np.asarray(r, dtype=u).view(x.dtype)


@evaluates(Opcode.SHIFT_LEFT)
def _shift_left(ev, instr, x, amount):
    return _logical_shift(np.left_shift, x, amount)


@evaluates(Opcode.SHIFT_RIGHT_LOGICAL)
def _shift_right_logical(ev, instr, x, amount):
    return _logical_shift(np.right_shift, x, amount)


@evaluates(Opcode.SHIFT_RIGHT_ARITHMETIC)
def _shift_right_arithmetic(ev, instr, x, amount):
    """Sign-filling shift of the bit pattern, for unsigned types too (XLA's AShr)."""
    i = signed_of(x.dtype)
    big, s = _shift_amounts(x, amount)
    xs = x.view(i)
    r = np.right_shift(xs, s.astype(i))
    if big is not None:
        r = np.where(big, np.where(xs < 0, i.type(-1), i.type(0)), r)
    return np.asarray(r, dtype=i).view(x.dtype)


_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)


@evaluates(Opcode.POPCNT)
def _popcnt(ev, instr, x):
    """np.bitwise_count (NumPy >= 2); else a SWAR count on the bits zero-extended to 64."""
    if hasattr(np, "bitwise_count"):
        return np.asarray(np.bitwise_count(x.view(unsigned_of(x.dtype))).astype(x.dtype))
    v = x.view(unsigned_of(x.dtype)).astype(np.uint64)
    with np.errstate(all="ignore"):
        v = v - ((v >> np.uint64(1)) & _M1)
        v = (v & _M2) + ((v >> np.uint64(2)) & _M2)
        v = (v + (v >> np.uint64(4))) & _M4
        v = (v * _H01) >> np.uint64(56)
    return np.asarray(v.astype(x.dtype))


def _bit_length(v: np.ndarray) -> np.ndarray:
    """Bit length of unsigned values below 2**53: frexp's exponent of the (exact) f64 value."""
    return np.frexp(v.astype(np.float64))[1]


@evaluates(Opcode.CLZ)
def _clz(ev, instr, x):
    """Bit width minus the bit length (from frexp, exact); 64-bit values in two 32-bit halves.
    clz(0) is the bit width."""
    u = unsigned_of(x.dtype)
    width = x.dtype.itemsize * 8
    v = x.view(u)
    if width <= 32:
        count = width - _bit_length(v)
    else:
        high = _bit_length(v >> np.uint64(32))
        count = np.where(high > 0, 32 - high, 64 - _bit_length(v & np.uint64(0xFFFFFFFF)))
    return np.asarray(np.asarray(count).astype(x.dtype))
