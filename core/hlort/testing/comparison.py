"""Comparing a backend's results with the reference interpreter's; saying how they differ.

Four kinds of comparison, chosen per op case:

``bits``        every bit equal, NaN payloads included (data movement, integers, pred)
``exact``       equal values, the sign of zero included; any NaN matches any NaN
``arith``       correctly rounded arithmetic (add, divide, sqrt...): 1 ulp by default
``transcendental``, ``accumulate``
                per-dtype defaults from :data:`DEFAULT_TOLERANCES` (a few ulp for exp/sin...;
                relative error for sums, dots and convolutions, whose order a backend may change)

Integer and pred results are always compared bitwise. A plugin's profile may loosen the float
kinds for specific ops (``ConformanceProfile.tolerances``).
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.plugin.conformance_profile import Tolerance

KINDS = ("bits", "exact", "arith", "transcendental", "accumulate")

_EXACT = Tolerance()
DEFAULT_TOLERANCES: dict[str, dict[str, Tolerance]] = {
    "arith": {
        name: Tolerance(ulp=1) for name in ("f64", "f32", "f16", "bf16", "f8e4m3fn", "f8e5m2")
    },
    "transcendental": {
        "f64": Tolerance(ulp=4, atol=1e-15),
        "f32": Tolerance(ulp=4, atol=1e-6),
        "f16": Tolerance(ulp=2, atol=1e-3),
        "bf16": Tolerance(ulp=2, atol=1e-2),
        "f8e4m3fn": Tolerance(ulp=1, atol=2e-2),
        "f8e5m2": Tolerance(ulp=1, atol=4e-2),
    },
    "accumulate": {
        "f64": Tolerance(ulp=4, rtol=1e-10, atol=1e-10),
        "f32": Tolerance(ulp=4, rtol=1e-4, atol=1e-5),
        "f16": Tolerance(ulp=2, rtol=1e-2, atol=1e-2),
        "bf16": Tolerance(ulp=2, rtol=4e-2, atol=4e-2),
        "f8e4m3fn": Tolerance(ulp=2, rtol=0.25, atol=0.25),
        "f8e5m2": Tolerance(ulp=2, rtol=0.5, atol=0.5),
    },
}


def default_tolerance(kind: str, dtype: DType) -> Tolerance:
    """The suite's tolerance for a ``kind`` comparison of ``dtype`` values."""
    return DEFAULT_TOLERANCES.get(kind, {}).get(dtype.component.name, _EXACT)


def _raw_bits(a: np.ndarray) -> np.ndarray:
    width = a.dtype.itemsize
    return np.asarray(a, order="C").view(np.dtype(f"u{width}"))


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Units in the last place between same-typed float arrays (uint64); +0 and -0 are 0 apart."""
    width = a.dtype.itemsize * 8
    sign = np.uint64(1) << np.uint64(width - 1)
    ba, bb = _raw_bits(a).astype(np.uint64), _raw_bits(b).astype(np.uint64)
    ma, mb = ba & (sign - np.uint64(1)), bb & (sign - np.uint64(1))
    same_sign = (ba & sign) == (bb & sign)
    with np.errstate(over="ignore"):
        return np.where(same_sign, np.maximum(ma, mb) - np.minimum(ma, mb), ma + mb)


def _fmt(value, dt: DType) -> str:
    """A value as Python prints it, with the raw bits of a float (NaN payloads, -0.0)."""
    arr = np.asarray(value).reshape(1)
    if dt.is_float:
        return f"{float(arr[0])!r} (0x{int(_raw_bits(arr)[0]):0{dt.itemsize * 2}x})"
    return repr(arr[0].item())


def _float_mismatches(
    actual: np.ndarray, expected: np.ndarray, kind: str, tol: Tolerance
) -> np.ndarray:
    """Boolean mask of elements outside the tolerance (float arrays of one dtype)."""
    a64 = actual.astype(np.float64)
    e64 = expected.astype(np.float64)
    a_nan, e_nan = np.isnan(a64), np.isnan(e64)
    bad = a_nan != e_nan
    both = ~(a_nan | e_nan)
    if kind == "exact" or (tol.ulp == 0 and tol.rtol == 0 and tol.atol == 0):
        return bad | (both & (_raw_bits(actual) != _raw_bits(expected)))
    inf = np.isinf(a64) | np.isinf(e64)
    bad |= both & inf & (a64 != e64)
    finite = both & ~inf
    close = np.zeros(actual.shape, dtype=bool)
    if tol.ulp:
        close |= ulp_distance(actual, expected) <= np.uint64(tol.ulp)
    if tol.rtol or tol.atol:
        with np.errstate(over="ignore", invalid="ignore"):
            close |= np.abs(a64 - e64) <= tol.atol + tol.rtol * np.abs(e64)
    return bad | (finite & ~close)


def describe_mismatch(
    actual: np.ndarray,
    expected: np.ndarray,
    kind: str,
    tol: Tolerance | None = None,
    what: str = "result",
) -> str | None:
    """None when ``actual`` matches ``expected`` under ``kind``; else a message for a human."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype or actual.shape != expected.shape:
        return (
            f"{what} is {actual.dtype}{list(actual.shape)}, expected "
            f"{expected.dtype}{list(expected.shape)}"
        )
    if actual.size == 0:
        return None
    dt = dtypes.from_numpy(expected.dtype)
    if kind == "bits" or not dt.is_floating_or_complex:
        if dt.is_complex:
            mask = (_raw_bits(actual.real) != _raw_bits(expected.real)) | (
                _raw_bits(actual.imag) != _raw_bits(expected.imag)
            )
        else:
            mask = _raw_bits(actual) != _raw_bits(expected)
        rule = "bitwise"
    else:
        tol = tol if tol is not None else default_tolerance(kind, dt)
        if dt.is_complex:
            mask = _float_mismatches(actual.real, expected.real, kind, tol) | _float_mismatches(
                actual.imag, expected.imag, kind, tol
            )
        else:
            mask = _float_mismatches(actual, expected, kind, tol)
        rule = "exactly (NaN matches any NaN)" if kind == "exact" else f"within {tol.describe()}"
    if not mask.any():
        return None
    where = np.argwhere(mask)
    lines = [
        f"{what}: {len(where)} of {actual.size} element(s) of {dt.name} differ (compared {rule})"
    ]
    for index in where[:3]:
        idx = tuple(int(i) for i in index)
        got, want = actual[idx], expected[idx]
        extra = ""
        if dt.is_float and kind != "bits":
            ulps = ulp_distance(np.reshape(got, 1), np.reshape(want, 1))[0]
            extra = f" ({int(ulps)} ulp apart)"
        lines.append(f"  at {list(idx)}: got {_fmt(got, dt)}, expected {_fmt(want, dt)}{extra}")
    if len(where) > 3:
        lines.append(f"  ... and {len(where) - 3} more")
    return "\n".join(lines)
