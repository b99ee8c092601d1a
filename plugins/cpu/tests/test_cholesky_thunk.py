"""cholesky on cpu runs on LAPACK (cholesky.py), never the interpreter fallback, and matches the
interpreter within linalg_tolerance.py's stated tolerance: every float and complex type, lower
and upper, batch and empty shapes, garbage (NaN, inf, huge) in the triangle that is not read,
matrices that are not positive definite or hold a NaN becoming all NaN."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from linalg_tolerance import assert_within_tolerance, run_native  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

LABEL = "cholesky (LAPACK)"
TYPES = ["f32", "f64", "c64", "c128", "bf16", "f16"]
NP = {
    "f32": np.float32,
    "f64": np.float64,
    "c64": np.complex64,
    "c128": np.complex128,
    "bf16": "bfloat16",
    "f16": np.float16,
}


def _module(dt: str, dims: tuple[int, ...], lower: bool):
    b = Builder("cholesky")
    a = b.parameter(shape.array(dt, dims))
    return b.build(b.cholesky(a, lower=lower))


def _numpy_type(dt: str) -> np.dtype:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16) if dt == "bf16" else np.dtype(NP[dt])


def hermitian_pd(
    dt: str, dims: tuple[int, ...], rng: np.random.Generator, lower: bool
) -> np.ndarray:
    """Well-conditioned Hermitian positive-definite matrices (M M^H / n + 2 I) whose unread
    triangle holds NaN, inf and huge values."""
    n = dims[-1]
    m = rng.standard_normal(dims)
    if dt.startswith("c"):
        m = m + 1j * rng.standard_normal(dims)
    a = m @ np.conj(np.swapaxes(m, -1, -2)) / max(n, 1) + 2 * np.eye(n)
    if n > 1:
        unread = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
        garbage = rng.choice(np.array([np.nan, np.inf, -np.inf, 3e4]), size=dims)
        a = np.where(unread, garbage, a)
    return a.astype(_numpy_type(dt))


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dims", [(1, 1), (5, 5), (2, 3, 7, 7), (0, 0), (3, 0, 0), (0, 4, 4)])
def test_cholesky_matches_interpreter(dt, lower, dims):
    rng = np.random.default_rng(sum(dims) + 7 * lower)
    a = hermitian_pd(dt, dims, rng, lower)
    got, ref = run_native(_module(dt, dims, lower), [a], LABEL)
    assert not np.isnan(np.asarray(ref, np.complex128)).any()  # every matrix factored
    assert_within_tolerance(got, ref, dims[-1])


@pytest.mark.parametrize("dt", ["f32", "f64", "c64", "c128"])
def test_cholesky_blocked_lapack_sizes(dt):
    """Orders where LAPACK factors by blocks (BLAS-3 updates) rather than column by column."""
    dims = (2, 130, 130)
    a = hermitian_pd(dt, dims, np.random.default_rng(3), True)
    got, ref = run_native(_module(dt, dims, True), [a], LABEL)
    assert_within_tolerance(got, ref, dims[-1])


@pytest.mark.parametrize("dt", TYPES)
@pytest.mark.parametrize("lower", [True, False])
def test_failed_matrices_become_nan_and_others_do_not(dt, lower):
    """Not positive definite, a negative or NaN pivot, a NaN or inf in the read triangle: that
    matrix all NaN (as the interpreter and JAX); the good matrices of the batch untouched."""
    rng = np.random.default_rng(11)
    n = 6
    a = hermitian_pd("c128" if dt.startswith("c") else "f64", (8, n, n), rng, lower)
    i, j = (4, 1) if lower else (1, 4)
    a[1, 0, 0] = -1.0  # first pivot negative
    a[2, 3, 3] = -50.0  # a later pivot negative
    a[3, i, j] = np.nan  # NaN in the read triangle
    a[4, 2, 2] = np.nan  # NaN pivot (OpenBLAS does not flag it)
    a[5, i, j] = np.inf  # inf below the diagonal: the next pivot is -inf
    a[6] = np.zeros((n, n))  # zero pivot
    a = a.astype(_numpy_type(dt))
    got, ref = run_native(_module(dt, (8, n, n), lower), [a], LABEL)
    failed = np.isnan(np.asarray(ref, np.complex128)).all(axis=(-2, -1))
    np.testing.assert_array_equal(failed, [False, True, True, True, True, True, True, False])
    assert_within_tolerance(got, ref, n)


@pytest.mark.parametrize("dt", ["f32", "f64", "c64", "c128"])
def test_infinite_pivot_matches_interpreter(dt):
    """An infinite diagonal entry: pivot inf, the column below it zero, the rest finite."""
    a = hermitian_pd(dt, (4, 4), np.random.default_rng(5), True)
    a[1, 1] = np.inf
    got, ref = run_native(_module(dt, (4, 4), True), [a], LABEL)
    assert np.isinf(np.asarray(ref)[1, 1])
    assert_within_tolerance(got, ref, 4)


def test_imaginary_part_of_the_diagonal_is_not_read():
    rng = np.random.default_rng(9)
    a = hermitian_pd("c128", (5, 5), rng, True)
    b = a + 1j * np.diag(rng.standard_normal(5))
    module = _module("c128", (5, 5), True)
    got_a, _ = run_native(module, [a], LABEL)
    got_b, ref_b = run_native(module, [b], LABEL)
    np.testing.assert_array_equal(got_a, got_b)
    assert_within_tolerance(got_b, ref_b, 5)


def test_operand_computed_by_a_kernel():
    """The operand is a kernel temporary (it may live in the program's arena)."""
    a = hermitian_pd("f32", (3, 8, 8), np.random.default_rng(41), True)
    a = np.where(np.isfinite(a), a, 0).astype(np.float32)
    b = Builder("from_kernel")
    x = b.parameter(shape.array("f32", (3, 8, 8)))
    module = b.build(b.negate(b.cholesky(b.add(x, x), lower=True)))
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"][LABEL] == 1, stats
    for _ in range(2):  # the second call reuses the arena
        assert_within_tolerance(exe(a), hlort.evaluate(module, [a]), 8)
