"""Running one op on cpu with no FALLBACK, and the stated tolerance of cpu cholesky and
triangular-solve against the reference interpreter (shared by test_cholesky_thunk.py,
test_triangular_solve_thunk.py and test_fft_thunk.py).

Both sides compute in f64 / c128 and round once to the result type. The cpu thunk matches the
interpreter where the reference is NaN (exactly there) or infinite (the same infinity), and
elsewhere per element within

    8 (n + 2) eps(f64) * max |finite ref| over the element's matrix
    + eps(result) * |ref| + smallest subnormal(result)

where n is the order of ``a``: LAPACK's blocked Cholesky, or NumPy's einsum pairing some partial
sums of the interpreter's substitution differently, rounds a few f64 ulps of the matrix's scale
apart from the interpreter's loops on the well-conditioned test matrices, and the final rounding
can then land one ulp of the result type apart.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
from contraction_tolerance import assert_within

import hlort


def run_native(module, args, label: str):
    """Compile on cpu, check the op ran natively as ``label``; (cpu result, interpreter's)."""
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"].get(label) == 1, stats
    return exe(*args), hlort.evaluate(module, args)


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def assert_same_bits(got, ref) -> None:
    """Bit for bit, NaN where the reference has NaN (payloads not compared)."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    parts = [(got.real, ref.real), (got.imag, ref.imag)] if got.dtype.kind == "c" else [(got, ref)]
    for g, r in parts:
        g, r = np.ascontiguousarray(g), np.ascontiguousarray(r)
        nan = np.isnan(r.astype(np.float64))
        np.testing.assert_array_equal(np.isnan(g.astype(np.float64)), nan)
        bits = f"u{g.dtype.itemsize}"
        np.testing.assert_array_equal(g[~nan].view(bits), r[~nan].view(bits))


def assert_within_tolerance(got, ref, n: int) -> None:
    """The module docstring's tolerance; ``n`` is the order of the matrices."""
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
    if ref.size == 0:
        return
    info = ml_dtypes.finfo(ref.real.dtype)
    wide_ref = _wide(ref)
    finite = np.where(np.isfinite(wide_ref), np.abs(wide_ref), 0.0)
    scale = finite.max(axis=(-2, -1), keepdims=True)
    tol = 8 * (n + 2) * float(np.finfo(np.float64).eps) * scale
    tol = tol + float(info.eps) * np.abs(wide_ref) + float(info.smallest_subnormal)
    assert_within(got, ref, tol)
