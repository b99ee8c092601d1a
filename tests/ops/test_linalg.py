"""cholesky and triangular-solve: shape rules, and batched values against numpy.linalg."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.interpreter import evaluate
from hlort.ir import verify_module
from hlort.ir.attributes import Transpose
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape

# (dtype, tolerance relative to the result's scale)
CASES = [
    (np.float32, 1e-4),
    (np.float64, 1e-10),
    (np.complex64, 1e-4),
    (np.complex128, 1e-10),
    (np.float16, 2e-2),
    (ml_dtypes.bfloat16, 5e-2),
]


def _param(b: Builder, arr: np.ndarray):
    return b.parameter(shape.array(dtypes.from_numpy(arr.dtype), arr.shape))


def run_cholesky(a: np.ndarray, lower: bool) -> np.ndarray:
    b = Builder("chol")
    module = b.build(b.cholesky(_param(b, a), lower=lower))
    verify_module(module)
    return evaluate(module, [a])


def run_solve(a, rhs, left_side, lower, unit_diagonal, transpose_a):
    b = Builder("trsm")
    x, y = _param(b, a), _param(b, rhs)
    module = b.build(b.triangular_solve(x, y, left_side, lower, unit_diagonal, transpose_a))
    verify_module(module)
    return evaluate(module, [a, rhs])


def hpd(rng, batch, n, dtype) -> np.ndarray:
    """Well-conditioned Hermitian positive-definite matrices."""
    complex_ = np.dtype(dtype).kind == "c"
    m = rng.standard_normal(batch + (n, n))
    if complex_:
        m = m + 1j * rng.standard_normal(batch + (n, n))
    a = m @ np.conj(np.swapaxes(m, -1, -2)) + n * np.eye(n)
    return a.astype(dtype)


def wide(dtype):
    return np.complex128 if np.dtype(dtype).kind == "c" else np.float64


# -- cholesky ---------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, tol", CASES)
@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_batched_matches_numpy(dtype, tol, lower):
    rng = np.random.default_rng(0)
    a = hpd(rng, (2, 3), 5, dtype)
    got = run_cholesky(a, lower)
    assert got.dtype == np.dtype(dtype) and got.shape == a.shape
    ref = np.linalg.cholesky(a.astype(wide(dtype)))  # lower factor
    if not lower:
        ref = np.conj(np.swapaxes(ref, -1, -2))
    scale = np.abs(ref).max()
    assert np.abs(got.astype(wide(dtype)) - ref).max() <= tol * scale
    # the other triangle is zero
    off = np.triu(np.ones((5, 5), bool), 1) if lower else np.tril(np.ones((5, 5), bool), -1)
    assert not got[..., off].any()


@pytest.mark.parametrize("lower", [True, False])
def test_cholesky_reads_only_its_triangle(lower):
    rng = np.random.default_rng(1)
    a = hpd(rng, (3,), 4, np.complex128)
    garbage = a.copy()
    unread = np.triu(np.ones((4, 4), bool), 1) if lower else np.tril(np.ones((4, 4), bool), -1)
    garbage[..., unread] = np.nan
    garbage[..., np.arange(4), np.arange(4)] += 5j  # the diagonal's imaginary part is not read
    np.testing.assert_array_equal(run_cholesky(garbage, lower), run_cholesky(a, lower))


def test_cholesky_not_positive_definite_gives_nan_matrix():
    rng = np.random.default_rng(2)
    a = hpd(rng, (3,), 3, np.float64)
    a[1] = np.diag([1.0, -1.0, 4.0])  # indefinite
    a[2, 0, 0] = 0.0  # zero pivot: not strictly positive definite
    got = run_cholesky(a, True)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
    np.testing.assert_allclose(got[0], np.linalg.cholesky(a[0]), rtol=1e-12)


def test_cholesky_nan_input():
    a = np.array([[np.nan, 0.0], [0.0, 1.0]], np.float32)
    assert np.isnan(run_cholesky(a, True)).all()


def test_cholesky_identity_and_empty():
    np.testing.assert_array_equal(run_cholesky(np.eye(3, dtype=np.float32), True), np.eye(3))
    empty = run_cholesky(np.zeros((2, 0, 0), np.float64), True)
    assert empty.shape == (2, 0, 0)


@pytest.mark.parametrize(
    "operand, words",
    [
        (shape.array("f32", [3, 4]), ["two minor dimensions", "f32[3,4]"]),
        (shape.array("f32", [3]), ["rank >= 2"]),
        (shape.array("s32", [3, 3]), ["floating-point or complex"]),
        (shape.array("pred", [2, 2]), ["floating-point or complex"]),
    ],
)
def test_cholesky_shape_rejected(operand, words):
    with pytest.raises(InvalidArgument) as err:
        infer_shape(Opcode.CHOLESKY, [operand], {"lower": True}, None, "ch")
    assert str(err.value).startswith("INVALID_ARGUMENT: cholesky ch:")
    for word in words:
        assert word in str(err.value)


def test_cholesky_attribute_checks():
    a = shape.array("f32", [2, 3, 3])
    assert infer_shape(Opcode.CHOLESKY, [a], {"lower": False}) == a
    assert infer_shape(Opcode.CHOLESKY, [a], {}) == a  # lower defaults to false, as in XLA
    with pytest.raises(InvalidArgument, match="lower=1 must be a bool"):
        infer_shape(Opcode.CHOLESKY, [a], {"lower": 1})


# -- triangular-solve -------------------------------------------------------------------------


def explicit_op_a(a, lower, unit, transpose):
    """op(T) where T is the triangle of ``a`` that the solve reads, built explicitly."""
    n = a.shape[-1]
    t = np.tril(a) if lower else np.triu(a)
    if unit:
        t = t - np.diagonal(t, axis1=-2, axis2=-1)[..., None] * np.eye(n) + np.eye(n)
    if transpose is Transpose.TRANSPOSE:
        t = np.swapaxes(t, -1, -2)
    elif transpose is Transpose.ADJOINT:
        t = np.conj(np.swapaxes(t, -1, -2))
    return t


def well_conditioned_triangular(rng, batch, n, dtype):
    a = rng.standard_normal(batch + (n, n)) * 0.3
    if np.dtype(dtype).kind == "c":
        a = a + 0.3j * rng.standard_normal(batch + (n, n))
    a = a + np.eye(n) * (2.0 + rng.random(batch + (n,)))[..., None, :]
    return a.astype(dtype)


@pytest.mark.parametrize("dtype, tol", CASES)
@pytest.mark.parametrize(
    "left_side, lower, unit, transpose",
    list(itertools.product([True, False], [True, False], [True, False], list(Transpose))),
)
def test_triangular_solve_matches_numpy(dtype, tol, left_side, lower, unit, transpose):
    rng = np.random.default_rng(3)
    a = well_conditioned_triangular(rng, (2,), 4, dtype)
    rhs_dims = (2, 4, 3) if left_side else (2, 3, 4)
    b = rng.standard_normal(rhs_dims)
    if np.dtype(dtype).kind == "c":
        b = b + 1j * rng.standard_normal(rhs_dims)
    b = b.astype(dtype)
    got = run_solve(a, b, left_side, lower, unit, transpose)
    assert got.dtype == np.dtype(dtype) and got.shape == b.shape
    t = explicit_op_a(a.astype(wide(dtype)), lower, unit, transpose)
    bw = b.astype(wide(dtype))
    if left_side:
        want = np.linalg.solve(t, bw)
    else:  # x t = b  <=>  t^T x^T = b^T
        want = np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(bw, -1, -2)), -1, -2)
    scale = np.abs(want).max()
    assert np.abs(got.astype(wide(dtype)) - want).max() <= tol * scale


@pytest.mark.parametrize("lower", [True, False])
def test_triangular_solve_reads_only_its_triangle(lower):
    rng = np.random.default_rng(4)
    a = well_conditioned_triangular(rng, (), 5, np.float64)
    b = rng.standard_normal((5, 2))
    garbage = a.copy()
    unread = np.triu(np.ones((5, 5), bool), 1) if lower else np.tril(np.ones((5, 5), bool), -1)
    garbage[unread] = np.nan
    args = (True, lower, False, Transpose.NO_TRANSPOSE)
    np.testing.assert_array_equal(run_solve(garbage, b, *args), run_solve(a, b, *args))
    # with unit_diagonal the diagonal is not read either
    garbage[np.arange(5), np.arange(5)] = np.nan
    unit = (True, lower, True, Transpose.NO_TRANSPOSE)
    got = run_solve(garbage, b, *unit)
    assert np.isfinite(got).all()
    np.testing.assert_allclose(
        explicit_op_a(a, lower, True, Transpose.NO_TRANSPOSE) @ got, b, rtol=1e-10, atol=1e-10
    )


def test_triangular_solve_zero_diagonal_gives_inf_or_nan():
    a = np.array([[0.0, 0.0], [1.0, 1.0]], np.float32)
    b = np.array([[1.0], [1.0]], np.float32)
    got = run_solve(a, b, True, True, False, Transpose.NO_TRANSPOSE)
    assert np.isinf(got[0, 0]) and not np.isfinite(got[1, 0])


def test_triangular_solve_nan_in_b_propagates_within_its_column():
    a = np.eye(3, dtype=np.float64) * 2
    a[2, 0] = 1.0
    b = np.array([[np.nan, 2.0], [1.0, 1.0], [1.0, 1.0]])
    got = run_solve(a, b, True, True, False, Transpose.NO_TRANSPOSE)
    assert np.isnan(got[0, 0]) and np.isnan(got[2, 0])  # x2 depends on x0
    np.testing.assert_array_equal(got[:, 1], [1.0, 0.5, 0.0])  # columns are independent


def test_triangular_solve_empty():
    got = run_solve(
        np.zeros((0, 0), np.float32),
        np.zeros((0, 3), np.float32),
        True,
        True,
        False,
        Transpose.NO_TRANSPOSE,
    )
    assert got.shape == (0, 3)
    got = run_solve(
        np.eye(2, dtype=np.float32),
        np.zeros((2, 0), np.float32),
        True,
        True,
        False,
        Transpose.NO_TRANSPOSE,
    )
    assert got.shape == (2, 0)


def _solve_attrs(left_side=True, **extra):
    attrs = {
        "left_side": left_side,
        "lower": True,
        "unit_diagonal": False,
        "transpose_a": Transpose.NO_TRANSPOSE,
    }
    attrs.update(extra)
    return attrs


@pytest.mark.parametrize(
    "a, b, attrs, words",
    [
        ([3, 3], [3, 2], _solve_attrs(left_side=False), ["left_side=False", "3 columns", "got 2"]),
        ([3, 3], [2, 3], _solve_attrs(), ["left_side=True", "3 rows", "got 2"]),
        ([3, 4], [3, 2], _solve_attrs(), ["two minor dimensions"]),
        ([3], [3], _solve_attrs(), ["rank >= 2"]),
        ([2, 3, 3], [3, 2], _solve_attrs(), ["same rank"]),
        ([2, 3, 3], [4, 3, 2], _solve_attrs(), ["batch dimensions"]),
        ([3, 3], [3, 2], _solve_attrs(transpose_a="TRANSPOSE"), ["transpose_a"]),
        ([3, 3], [3, 2], _solve_attrs(lower="yes"), ["lower='yes' must be a bool"]),
    ],
)
def test_triangular_solve_shape_rejected(a, b, attrs, words):
    with pytest.raises(InvalidArgument) as err:
        infer_shape(
            Opcode.TRIANGULAR_SOLVE,
            [shape.array("f32", a), shape.array("f32", b)],
            attrs,
            None,
            "ts",
        )
    assert str(err.value).startswith("INVALID_ARGUMENT: triangular-solve ts:")
    for word in words:
        assert word in str(err.value), str(err.value)


def test_triangular_solve_type_checks():
    attrs = _solve_attrs()
    with pytest.raises(InvalidArgument, match="same element type"):
        infer_shape(
            Opcode.TRIANGULAR_SOLVE, [shape.array("f32", [3, 3]), shape.array("f64", [3, 2])], attrs
        )
    with pytest.raises(InvalidArgument, match="floating-point or complex"):
        infer_shape(
            Opcode.TRIANGULAR_SOLVE, [shape.array("s32", [3, 3]), shape.array("s32", [3, 2])], attrs
        )
    out = infer_shape(
        Opcode.TRIANGULAR_SOLVE,
        [shape.array("c64", [5, 3, 3]), shape.array("c64", [5, 4, 3])],
        _solve_attrs(left_side=False),
    )
    assert out == shape.array("c64", [5, 4, 3])
