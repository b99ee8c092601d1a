"""How the interpreter computes in floating point and rounds back to an element type.

Transcendental functions of f16, bf16, float8, f32 and c64 are evaluated in f64 (c128) and then
rounded, so the reference result is within half an ulp or so of the true value of the f32 upcast
XLA uses for narrow types: narrow types round through f32 exactly as XLA's upcasting does.

Conversions must round once, to nearest even. Rounding f64 (or a 64-bit integer) to bf16/f16/f8
through f32 would round twice, so those go through f32 with *round-to-odd*, which makes the second
rounding exact (f32 has at least two more significand bits than every narrower type).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Set

import numpy as np

from hlort.dtypes import DType

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
C64 = np.dtype(np.complex64)
C128 = np.dtype(np.complex128)


def is_ml_dtype(dtype: np.dtype, dt: DType) -> bool:
    """``dtype == dt.numpy`` for an ml_dtypes type, without importing ml_dtypes: while it is not
    imported no array can have one of its types."""
    return "ml_dtypes" in sys.modules and dtype == dt.numpy


class _NarrowFloats(Set):
    """float16, bfloat16 and the float8 types (computed in f32), as a set of NumPy dtypes that
    imports ml_dtypes only once something asks about a type that is not NumPy's float16."""

    _F16 = np.dtype(np.float16)

    def _all(self) -> frozenset:
        from hlort import dtypes

        return frozenset({self._F16, *(d.numpy for d in dtypes.FLOAT_DTYPES if d.from_ml_dtypes)})

    def __contains__(self, dtype) -> bool:
        if dtype == self._F16:
            return True
        return "ml_dtypes" in sys.modules and dtype in self._all()

    def __iter__(self):
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


NARROW_FLOATS: Set = _NarrowFloats()


def is_complex(dtype: np.dtype) -> bool:
    return dtype.kind == "c"


def widen(x: np.ndarray) -> np.ndarray:
    """``x`` as f64 (c128 when complex): exact for every float type hlort has."""
    return x.astype(C128 if is_complex(x.dtype) else F64)


def round_result(y, dtype: np.dtype) -> np.ndarray:
    """A wide result rounded to ``dtype`` the way XLA's f32 upcast would: narrow types via f32."""
    y = np.asarray(y)
    if dtype in NARROW_FLOATS:
        return np.asarray(y.astype(F32).astype(dtype))
    return np.asarray(y.astype(dtype))


def apply_wide(fn: Callable[..., np.ndarray], dtype: np.dtype, *xs: np.ndarray) -> np.ndarray:
    """``fn`` evaluated in f64/c128 on ``xs`` (all of ``dtype``), rounded back to ``dtype``."""
    with np.errstate(all="ignore"):
        return round_result(fn(*(widen(x) for x in xs)), dtype)


def apply_native(fn: Callable[..., np.ndarray], dtype: np.dtype, *xs: np.ndarray) -> np.ndarray:
    """``fn`` in ``dtype`` itself when NumPy has it natively (f32, f64, c64, c128), else in f32.

    For +, -, *, / and sqrt, f32 has enough bits (24 >= 2p + 2 for p <= 11) that rounding the f32
    result to a narrow type equals rounding the exact result: one correctly rounded operation.
    """
    with np.errstate(all="ignore"):
        if dtype in NARROW_FLOATS:
            return np.asarray(fn(*(x.astype(F32) for x in xs)).astype(dtype))
        return np.asarray(fn(*xs), dtype=dtype)


def round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """f64 -> f32 rounding to odd: inexact results get an odd last significand bit.

    Infinite results of finite inputs become the largest finite f32, so a later rounding to a
    narrower type still sees "above the largest value" and overflows correctly.
    """
    with np.errstate(all="ignore"):
        f = x.astype(F32)
        back = f.astype(F64)
        inexact = (back != x) & ~np.isnan(x)
        even = (f.view(np.uint32) & np.uint32(1)) == 0
        toward = np.where(back > x, -np.inf, np.inf).astype(F32)
        return np.where(inexact & even, np.nextafter(f, toward), f)


def int_to_f64_round_to_odd(x: np.ndarray) -> np.ndarray:
    """Integers -> f64 rounding to odd (exact below 2**53; 64-bit values use an exact split)."""
    if x.dtype.itemsize < 8:
        return x.astype(F64)
    with np.errstate(all="ignore"):
        low = (x & x.dtype.type(0xFFFFFFFF)).astype(F64)  # exact, in [0, 2**32)
        high = (x - (x & x.dtype.type(0xFFFFFFFF))).astype(F64)  # exact: 32 significant bits
        s = high + low
        # TwoSum: ``s + err == high + low`` exactly.
        b = s - high
        err = (high - (s - b)) + (low - b)
        even = (s.view(np.uint64) & np.uint64(1)) == 0
        toward = np.where(err > 0, np.inf, -np.inf)
        return np.where((err != 0) & even, np.nextafter(s, toward), s)


def float_from_f64(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round f64 values to the float ``dtype`` once, to nearest even (overflow to inf or NaN)."""
    with np.errstate(all="ignore"):
        if dtype == F64:
            return np.asarray(x, dtype=F64)
        if dtype == F32:
            return np.asarray(x.astype(F32))
        return np.asarray(round_to_odd_f32(x).astype(dtype))


def float_from_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Round integers to the float ``dtype`` once, to nearest even."""
    if dtype == F64:
        return np.asarray(x.astype(F64))
    return float_from_f64(int_to_f64_round_to_odd(x), dtype)
