"""The comparisons behind StableHLO's test assertions, vectorized over whole arrays.

One implementation for both places these assertions appear: the testdata runner's ``check.*``
ops (compared after execution, :func:`compare`) and the ``check.*`` custom-call targets the
interpreter runs (:mod:`hlort.testdata.check_targets`, through :func:`elements_match`).

Semantics follow StableHLO's reference checks:

- ``eq``: exact equality (NaN equals NaN here, so a NaN-producing op can be checked; +0 == -0).
- ``almost_eq``: for floats, equal, or both NaN, or same sign (zero counts as either) and
  ``|a - b| <= tolerance``; complex numbers compare real and imaginary parts; integers are exact.
- ``close``: the ULP difference is within ``[min_ulp, max_ulp]``. Bitwise-equal values differ by
  0 ULP, NaN vs NaN by 0, finite values by the distance of their magnitudes' bit patterns (summed
  when the signs differ), anything else (inf vs finite...) by "infinitely many". Complex numbers
  take the larger of the two parts' differences. Integers are exact.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlort import dtypes

_MAX_ULP = np.iinfo(np.uint64).max


@dataclass
class Mismatch:
    """The first element where a check failed."""

    index: tuple[int, ...]
    got: object
    expected: object
    detail: str = ""

    def __str__(self) -> str:
        where = "[" + ", ".join(map(str, self.index)) + "]"
        extra = f" ({self.detail})" if self.detail else ""
        return f"index {where}: got {_fmt(self.got)}, expected {_fmt(self.expected)}{extra}"


def _fmt(value) -> str:
    if isinstance(value, (np.floating, float)) or getattr(value, "dtype", None) is not None:
        try:
            return repr(value.item() if hasattr(value, "item") else value)
        except (TypeError, ValueError):
            return str(value)
    return repr(value)


def compare(
    kind: str,
    actual: np.ndarray,
    expected: np.ndarray,
    tolerance: float = 1e-4,
    min_ulp: int = 0,
    max_ulp: int = 3,
) -> Mismatch | str | None:
    """None when ``actual`` satisfies the check; otherwise a :class:`Mismatch` (or a string for a
    shape or type mismatch)."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    if actual.shape != expected.shape:
        return f"shape {list(actual.shape)} differs from the expected {list(expected.shape)}"
    if actual.dtype != expected.dtype:
        return f"element type {actual.dtype} differs from the expected {expected.dtype}"
    if actual.size == 0:
        return None
    ok = elements_match(kind, actual, expected, tolerance, min_ulp, max_ulp)
    first = _first_false(ok)
    if first is None:
        return None
    detail = ""
    if is_floating(actual.dtype) and kind == "almost_eq":
        detail = f"tolerance {tolerance}"
    elif is_floating(actual.dtype) and kind == "close":
        d = int(ulp_difference(np.asarray(actual[first]), np.asarray(expected[first])))
        shown = "inf" if d == _MAX_ULP else str(d)
        detail = f"ULP difference {shown}, allowed [{min_ulp}, {max_ulp}]"
    return Mismatch(first, actual[first], expected[first], detail)


def elements_match(
    kind: str,
    actual: np.ndarray,
    expected: np.ndarray,
    tolerance: float = 1e-4,
    min_ulp: int = 0,
    max_ulp: int = 3,
) -> np.ndarray:
    """Per element of ``actual`` and ``expected`` (one shape, one type): whether check ``kind``
    (``eq``, ``almost_eq``, ``close``) holds. Integers and pred compare exactly, whatever the
    kind."""
    if kind == "eq" or not is_floating(actual.dtype):
        return exactly_equal(actual, expected)
    if kind == "almost_eq":
        return approximately_equal(actual, expected, tolerance)
    if kind == "close":
        diff = ulp_difference(actual, expected)
        return (diff >= np.uint64(min_ulp)) & (diff <= np.uint64(max_ulp))
    raise ValueError(f"unknown check kind {kind!r}")


def is_floating(dtype: np.dtype) -> bool:
    """Float or complex (bfloat16 and float8 included): the types the inexact checks apply to."""
    return dtypes.from_numpy(dtype).is_floating_or_complex


def _first_false(ok: np.ndarray) -> tuple[int, ...] | None:
    ok = np.asarray(ok)
    if ok.all():
        return None
    flat = int(np.argmin(ok.reshape(-1)))
    return tuple(int(i) for i in np.unravel_index(flat, ok.shape))


def _parts(x: np.ndarray) -> list[np.ndarray]:
    if x.dtype.kind == "c":
        return [x.real, x.imag]
    return [x]


def exactly_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element: equal (NaN equals NaN, +0 equals -0); integers and pred compare as they are."""
    if not is_floating(a.dtype):
        return a == b
    ok = np.ones(a.shape, bool)
    for pa, pb in zip(_parts(a), _parts(b), strict=True):
        fa, fb = pa.astype(np.float64), pb.astype(np.float64)
        ok &= (fa == fb) | (np.isnan(fa) & np.isnan(fb))
    return ok


def approximately_equal(a: np.ndarray, b: np.ndarray, tolerance: float) -> np.ndarray:
    """Per element, for float and complex ``a``, ``b``: StableHLO's areApproximatelyEqual."""
    ok = np.ones(a.shape, bool)
    for pa, pb in zip(_parts(a), _parts(b), strict=True):
        f, g = pa.astype(np.float64), pb.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            equal = f == g
            both_nan = np.isnan(f) & np.isnan(g)
            either_nan = np.isnan(f) | np.isnan(g)
            special_f = ~np.isfinite(f) | (f == 0)
            special_g = ~np.isfinite(g) | (g == 0)
            neither_zero = (f != 0) & (g != 0)
            rejected = (special_f | special_g) & neither_zero
            same_sign = np.signbit(f) == np.signbit(g)
            close = np.abs(f - g) <= tolerance
        ok &= equal | both_nan | (~either_nan & ~rejected & same_sign & close)
    return ok


def ulp_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-element ULP distance as uint64 (complex: the larger over real and imaginary parts)."""
    out = np.zeros(a.shape, np.uint64)
    for pa, pb in zip(_parts(a), _parts(b), strict=True):
        real = _ulp_real(np.ascontiguousarray(pa), np.ascontiguousarray(pb))
        out = np.maximum(out, real.reshape(a.shape))  # ascontiguousarray makes 0-d 1-d
    return out


def _ulp_real(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    width = a.dtype.itemsize
    bits = np.dtype(f"u{width}")
    sign = np.uint64(1) << np.uint64(8 * width - 1)
    ia = a.view(bits).astype(np.uint64)
    ib = b.view(bits).astype(np.uint64)
    mag_a, mag_b = ia & ~sign, ib & ~sign
    neg_a, neg_b = (ia & sign) != 0, (ib & sign) != 0
    fa, fb = a.astype(np.float64), b.astype(np.float64)
    finite = np.isfinite(fa) & np.isfinite(fb)
    same = np.where(mag_a > mag_b, mag_a - mag_b, mag_b - mag_a)
    diff = np.where(neg_a != neg_b, mag_a + mag_b, same)
    out = np.where(finite, diff, np.uint64(_MAX_ULP))
    out = np.where(np.isnan(fa) & np.isnan(fb), np.uint64(0), out)
    return np.where(ia == ib, np.uint64(0), out).astype(np.uint64)
