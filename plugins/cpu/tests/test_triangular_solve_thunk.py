"""triangular-solve on cpu runs on the compiled substitution kernel (triangular_solve.py), never
the interpreter fallback, and matches the interpreter within linalg_tolerance.py's stated
tolerance (usually bit for bit): every form (left_side, lower, unit_diagonal, transpose_a), every
float and complex type, batch and empty shapes, garbage in the triangle that is not read, NaN and
inf in b, zero pivots (inf / NaN as IEEE division), and sizes that span several column blocks and
threads."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("llvmlite")

from linalg_tolerance import (  # noqa: E402
    assert_same_bits,
    assert_within_tolerance,
    run_native,
)

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

LABEL = "triangular-solve (substitution kernel)"
TYPES = ["f32", "f64", "c64", "c128", "bf16", "f16"]
NP = {
    "f32": np.float32,
    "f64": np.float64,
    "c64": np.complex64,
    "c128": np.complex128,
    "bf16": ml_dtypes.bfloat16,
    "f16": np.float16,
}
FORMS = list(
    itertools.product(
        [True, False], [True, False], [False, True], ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"]
    )
)


def _module(dt: str, a_dims, b_dims, left, lower, unit, transpose):
    b = Builder("triangular_solve")
    a = b.parameter(shape.array(dt, a_dims))
    rhs = b.parameter(shape.array(dt, b_dims))
    return b.build(b.triangular_solve(a, rhs, left, lower, unit, transpose))


def _random(dt: str, dims, rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal(dims)
    if dt.startswith("c"):
        x = x + 1j * rng.standard_normal(dims)
    return x


def triangular(dt: str, dims, lower: bool, rng: np.random.Generator) -> np.ndarray:
    """Well-conditioned triangles (diagonal 1 to 3 in magnitude, off-diagonal ~1/n); the other
    triangle holds NaN, inf and large values, which must never be read."""
    n = dims[-1]
    a = _random(dt, dims, rng) / max(n, 1)
    sign = rng.choice([-1.0, 1.0], size=dims[:-1])
    diag = sign * (1.0 + 2.0 * rng.random(dims[:-1]))
    a[..., np.arange(n), np.arange(n)] = diag
    unread = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    garbage = rng.choice(np.array([np.nan, np.inf, -np.inf, 3e4]), size=dims)
    return np.where(unread, garbage, a).astype(NP[dt])


def _case(dt, batch, n, m, form, seed):
    left, lower, unit, transpose = form
    rng = np.random.default_rng(seed)
    a_dims = (*batch, n, n)
    b_dims = (*batch, n, m) if left else (*batch, m, n)
    a = triangular(dt, a_dims, lower, rng)
    b = _random(dt, b_dims, rng).astype(NP[dt])
    return _module(dt, a_dims, b_dims, *form), [a, b]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dt", TYPES)
def test_every_form_and_type_matches_interpreter(dt, form):
    module, args = _case(dt, (2,), 7, 5, form, 17)
    got, ref = run_native(module, args, LABEL)
    assert np.isfinite(np.asarray(ref, np.complex128)).all()
    assert_within_tolerance(got, ref, 7)


@pytest.mark.parametrize(
    "dims", [((), 0, 3), ((), 4, 0), ((0,), 3, 2), ((2, 3), 1, 1), ((), 1, 9), ((3, 2), 5, 1)]
)
@pytest.mark.parametrize(
    "form", [(True, True, False, "NO_TRANSPOSE"), (False, False, True, "ADJOINT")]
)
@pytest.mark.parametrize("dt", ["f32", "c128"])
def test_empty_scalar_and_batch_shapes(dt, form, dims):
    batch, n, m = dims
    module, args = _case(dt, batch, n, m, form, n + 3 * m)
    got, ref = run_native(module, args, LABEL)
    assert_within_tolerance(got, ref, n)


@pytest.mark.parametrize(
    "form",
    [
        (True, True, False, "NO_TRANSPOSE"),
        (True, False, False, "TRANSPOSE"),
        (False, True, False, "ADJOINT"),
    ],
)
@pytest.mark.parametrize("dt", ["f64", "c64"])
def test_many_column_blocks_and_threads(dt, form):
    """m spans several 64-column blocks (the last one partial); batch x blocks split on threads."""
    module, args = _case(dt, (3,), 40, 150, form, 5)
    got, ref = run_native(module, args, LABEL)
    assert_within_tolerance(got, ref, 40)


@pytest.mark.parametrize("dt", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_nan_and_inf_in_b_and_zero_pivots_as_ieee(dt, lower):
    """Special values flow through the substitution exactly as through the interpreter's."""
    rng = np.random.default_rng(23)
    n, m = 6, 5
    a = triangular(dt, (n, n), lower, rng)
    a[2, 2] = 0  # a zero pivot: inf or NaN from row 2 on
    b = _random(dt, (n, m), rng).astype(NP[dt])
    b[0, 1] = np.nan
    b[4, 2] = np.inf
    b[2, 3] = 0  # 0 / 0 on the zero pivot when the partial sum is 0 too
    module = _module(dt, (n, n), (n, m), True, lower, False, "NO_TRANSPOSE")
    got, ref = run_native(module, [a, b], LABEL)
    assert np.isnan(np.asarray(ref, np.complex128)).any()
    assert_same_bits(got, ref)


@pytest.mark.parametrize("dt", ["f32", "c64"])
def test_unit_diagonal_never_reads_the_diagonal(dt):
    rng = np.random.default_rng(29)
    a = triangular(dt, (5, 5), True, rng)
    a[np.arange(5), np.arange(5)] = np.nan
    b = _random(dt, (5, 3), rng).astype(NP[dt])
    module = _module(dt, (5, 5), (5, 3), True, True, True, "NO_TRANSPOSE")
    got, ref = run_native(module, [a, b], LABEL)
    assert np.isfinite(np.asarray(got, np.complex128)).all()
    assert_within_tolerance(got, ref, 5)


@pytest.mark.parametrize("dt", ["f8e4m3fn", "f8e5m2"])
def test_float8(dt):
    """float8 solves in f64 like the others and rounds once."""
    rng = np.random.default_rng(31)
    f8 = np.dtype(getattr(ml_dtypes, {"f8e4m3fn": "float8_e4m3fn", "f8e5m2": "float8_e5m2"}[dt]))
    a = np.tril(rng.standard_normal((4, 4)) / 4) + 2 * np.eye(4)
    b = rng.standard_normal((4, 2))
    module = _module(dt, (4, 4), (4, 2), True, True, False, "NO_TRANSPOSE")
    got, ref = run_native(module, [a.astype(f8), b.astype(f8)], LABEL)
    assert_within_tolerance(got, ref, 4)


def test_operands_computed_by_kernels():
    """a and b are kernel temporaries (they may live in the program's arena)."""
    rng = np.random.default_rng(37)
    bld = Builder("from_kernels")
    a = bld.parameter(shape.array("f64", (2, 6, 6)))
    rhs = bld.parameter(shape.array("f64", (2, 6, 3)))
    x = bld.triangular_solve(bld.add(a, a), bld.negate(rhs), True, True, False, "TRANSPOSE")
    module = bld.build(bld.multiply(x, x))
    args = [triangular("f64", (2, 6, 6), False, rng), _random("f64", (2, 6, 3), rng)]
    args[0] = np.where(np.isfinite(args[0]), args[0], 0.0)  # add(a, a) reads both triangles
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"][LABEL] == 1, stats
    for _ in range(2):  # the second call reuses the arena
        assert_within_tolerance(exe(*args), hlort.evaluate(module, args), 6)
