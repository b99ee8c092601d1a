"""Complex dots the interpreter leaves to BLAS (over SEQUENTIAL_MAX_PRODUCTS products) give the
NaN, infinities and zero signs of its in-order sum (complex_specials.py): complex gemm's
``alpha = 1 + 0i`` scaling would make every infinite sum ``NaN + NaN i`` and leave -0.0 parts.
Exact: same NaN places, same infinities and zero signs per part; finite elements within the
dot bound ``2 (K + 2) eps sum |a b|`` of the in-order sum."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.interpreter.ops import complex_specials, linalg
from hlort.interpreter.ops.complex_specials import real_gemm_product, repair_specials

# NaN and infinities are the inputs: NumPy warnings from inside hlort must not reach users
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def _in_order(a, b):
    return linalg._contract_in_order(a, b, linalg._product_shape(a, b))


def _operands(rng, dtype, batch=2, m=6, k=80, n=5):
    a = rng.standard_normal((batch, m, k)) + 1j * rng.standard_normal((batch, m, k))
    b = rng.standard_normal((batch, k, n)) + 1j * rng.standard_normal((batch, k, n))
    a[0, 1, 3] = np.inf  # a row of infinite sums
    a[1, 2, 0], a[1, 2, 1] = np.inf, -np.inf  # inf - inf: NaN
    b[1, 4, 3] = complex(np.nan, 0)  # a NaN column
    a[0, 0, :] = complex(-0.0, -0.0)  # products -0 and +0: sums +0
    b[0, :, 0] = np.abs(b[0, :, 0].real) + 1j * np.abs(b[0, :, 0].imag)
    return a.astype(dtype), b.astype(dtype)


def _assert_same_specials(got, want, a, b, eps):
    finite = lambda x: np.where(np.isfinite(x), np.abs(x), 0)  # noqa: E731
    bound = 2 * (a.shape[-1] + 2) * eps * np.matmul(finite(a), finite(b))
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_array_equal(g[np.isinf(w)], w[np.isinf(w)])
        zero = (g == 0) & (w == 0)
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(w[zero]))
        finite = np.isfinite(w)
        ok = np.isfinite(w)
        assert np.all(np.abs(g[ok] - w[ok]) <= bound[ok])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_blas_complex_dot_keeps_the_in_order_specials(dtype, monkeypatch):
    a, b = _operands(np.random.default_rng(2), dtype)
    want = _in_order(a, b)
    monkeypatch.setattr(linalg, "SEQUENTIAL_MAX_PRODUCTS", 1)  # the BLAS path
    got = linalg.contract(a, b)
    assert np.isinf(want.real).any() and np.isnan(want.real).any()
    _assert_same_specials(got, want, a, b, float(np.finfo(dtype).eps))


def test_an_overflowed_sum_of_finite_values_is_resummed():
    """No operand is non-finite, but a sum overflows: that element alone is summed again."""
    a = np.array([[3e38 + 0j, 3e38 + 0j], [1 + 1j, 2 + 0j]], np.complex64)
    b = np.array([[1 + 0j, 1 + 0j], [1 + 0j, 0.5 + 0j]], np.complex64)
    with np.errstate(over="ignore", invalid="ignore"):  # the test's own gemm
        out = np.matmul(a, b)
    out[0, 0] = complex(np.nan, np.nan)  # what complex gemm's alpha scaling makes of inf + 0i
    repair_specials(a, b, out)
    np.testing.assert_array_equal(out, _in_order(a, b))
    assert np.isposinf(out[0, 0].real) and out[0, 0].imag == 0


def test_real_products_are_left_alone():
    """A real gemm scales by a real 1: its non-finite elements are the interpreter's, not
    looked at again (a planted wrong value stays)."""
    a = np.array([[np.inf, 1.0]], np.float32)
    b = np.array([[1.0], [1.0]], np.float32)
    out = np.array([[-np.inf]], np.float32)
    repair_specials(a, b, out)
    assert np.isneginf(out[0, 0])


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_an_overflow_of_one_part_leaves_the_other_as_the_in_order_sum(dtype):
    """Products ``h (1 + i) * h (1 + i) = 0 + 2 h^2 i``: the imaginary sum overflows, the real
    one is exactly 0 in the interpreter's order, while ``ar @ br - ai @ bi`` is inf - inf (each
    real gemm overflows on its own): the overflowed elements are summed again in that order."""
    h = np.sqrt(np.finfo(dtype).max / 64)  # h^2 K overflows, 2 h^2 does not
    a = np.full((3, 128), h * (1 + 1j), dtype)
    b = np.full((128, 2), h * (1 + 1j), dtype)
    a[1] = 1 + 2j  # a finite row stays as BLAS has it
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.matmul(a, b)
        want = _in_order(a, b)
        repair_specials(a, b, out)
    assert (want.real[[0, 2]] == 0).all() and np.isposinf(want.imag[[0, 2]]).all()
    np.testing.assert_array_equal(out[[0, 2]], want[[0, 2]])
    np.testing.assert_allclose(out[1], want[1], rtol=1e-6)


def test_overflowed_elements_beyond_the_in_order_budget_come_from_real_gemms(monkeypatch):
    """Past IN_ORDER_MAX_PRODUCTS products per repair (here 3 elements x K = 128 > 300) the
    overflowed elements are the four real gemms' (NaN + inf i here), so a huge all-overflowing
    product costs gemms, not seconds of NumPy sums; the first matrix of the batch is in order."""
    monkeypatch.setattr(complex_specials, "IN_ORDER_MAX_PRODUCTS", 300)
    h = np.sqrt(np.finfo(np.float32).max / 64)
    a = np.full((2, 2, 128), h * (1 + 1j), np.complex64)
    b = np.full((2, 128, 1), h * (1 + 1j), np.complex64)
    a[0, 1] = 1  # batch 0: one overflowed element (128 products, within the budget)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.matmul(a, b)
        want = _in_order(a, b)
        gemms = real_gemm_product(a[1], b[1])
        repair_specials(a, b, out)
    np.testing.assert_array_equal(out[0], want[0])
    np.testing.assert_array_equal(out[1], gemms)
    assert np.isnan(out[1].real).all() and (want[1].real == 0).all()


def _special_and_overflow(dtype, k=128):
    """Rows and columns holding an infinity whose other products overflow (module docstring
    of complex_specials): ``h (1 + i) * h (1 + i) = 0 + 2 h^2 i`` products, whose real sum is 0
    in order while ``ar @ br`` and ``ai @ bi`` each overflow (inf - inf: NaN)."""
    h = np.sqrt(np.finfo(dtype).max / 64)  # h^2 K overflows, 2 h^2 does not
    a = np.full((4, k), h * (1 + 1j), dtype)
    b = np.full((k, 4), h * (1 + 1j), dtype)
    a[0, 0] = np.inf  # first: inf + inf i in order (the real gemms: NaN + inf i)
    a[1, k - 1] = np.inf  # last, after the finite sums overflowed
    b[:, 2] = h * (-1 + 0j)  # real parts -h^2 each: the finite sums overflow to -inf ...
    b[0, 2] = b[k - 1, 2] = h  # ... row 0 meets +inf first (in order: +inf), row 1 last (NaN)
    a[3] = 1 + 2j  # a finite row: only the special columns
    b[5, 3] = complex(0, np.inf)  # an infinite column among overflowing products
    return a, b


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_a_special_row_or_column_whose_other_products_overflow_is_summed_in_order(dtype):
    a, b = _special_and_overflow(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.matmul(a, b)
        want = _in_order(a, b)
        gemms = real_gemm_product(a, b)
        repair_specials(a, b, out)
    assert np.isposinf(want[0, 0].real) and np.isnan(gemms[0, 0].real)  # the case is built
    assert np.isposinf(want[0, 2].real) and np.isnan(want[1, 2].real)
    with np.errstate(over="ignore"):  # the bound's own |a| @ |b| overflows
        _assert_same_specials(out, want, a, b, float(np.finfo(dtype).eps))
    np.testing.assert_array_equal(out[:3], want[:3])  # the overflowing rows: in order, exactly


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_the_blas_path_of_the_interpreter_keeps_them(dtype, monkeypatch):
    a, b = _special_and_overflow(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        want = _in_order(a, b)
    monkeypatch.setattr(linalg, "SEQUENTIAL_MAX_PRODUCTS", 1)  # the BLAS path
    got = linalg.contract(a, b)
    with np.errstate(over="ignore"):  # the bound's own |a| @ |b| overflows
        _assert_same_specials(got, want, a, b, float(np.finfo(dtype).eps))
    np.testing.assert_array_equal(got[:3], want[:3])
