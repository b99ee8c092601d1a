"""Cholesky as one GPU kernel per solve (cholesky_schedule.py: one block per matrix), on the
host simulator against the interpreter: every real conformance case, lower and upper factors of
batched SPD matrices of several sizes (fewer rows than threads and, with the block capped, more), a
matrix that is not positive definite (all NaN, as JAX makes it) beside ones that are, NaN
input, the unread triangle poisoned with NaN, and empty shapes; complex (c64, c128) Hermitian
matrices the same way (an upper factor is the adjoint of the lower one of ``a^H``).

Tolerance: the kernel sums in ascending k from +0 in f64; the interpreter's NumPy sums pair
terms their own way, so f64 results differ by roundings of those sums (relative 1e-12 here, for
matrices with condition number < 100) and narrower results by at most one rounding to the result
type (one ulp: relative eps of the type; a c64 part: that of f32)."""

import ml_dtypes
import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "cholesky"]
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
NUMPY.update(c64=np.complex64, c128=np.complex128)
RTOL = {"f16": 2.0**-10, "bf16": 2.0**-7, "f32": 2.0**-23, "f64": 1e-12, "c64": 2.0**-23}
RTOL["c128"] = 1e-12


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    program = simulated_program(case.module)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"cholesky"}
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem


def _run_both(dtype, dims, lower, a):
    shape = f"{dtype}[{','.join(map(str, dims))}]"
    module = parse_module(
        f"""HloModule c
ENTRY main {{
  a = {shape} parameter(0)
  ROOT l = {shape} cholesky(a), lower={str(lower).lower()}
}}
"""
    )
    expected = np.asarray(flatten_value(evaluate(module, [a]))[0])
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    (got,) = HostSimRunner(program).run([a])
    return got, expected


def _spd(rng, batch, n, is_complex=False):
    """Positive definite (Hermitian when complex) matrices of condition number < 100."""
    g = rng.standard_normal((batch, n, n))
    if is_complex:
        g = g + 1j * rng.standard_normal((batch, n, n))
    return g @ np.conj(g.transpose(0, 2, 1)) + n * np.eye(n)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n", [1, 5, 40])
def test_batched_factors_match_the_interpreter(dtype, lower, n):
    rng = np.random.default_rng(n)
    a = _spd(rng, 3, n, dtype.startswith("c")).astype(NUMPY[dtype])
    got, expected = _run_both(dtype, a.shape, lower, a)
    wide = np.complex128 if dtype.startswith("c") else np.float64
    np.testing.assert_allclose(got.astype(wide), expected.astype(wide), rtol=RTOL[dtype], atol=0)
    other = np.triu_indices(n, 1) if lower else np.tril_indices(n, -1)
    assert not got[:, other[0], other[1]].any()  # the other triangle is zero


def test_a_failed_pivot_makes_only_its_matrix_nan():
    rng = np.random.default_rng(5)
    a = _spd(rng, 3, 6)
    a[1, 2, 2] = -50.0  # not positive definite from column 2 on
    a[2, 4, 1] = np.nan  # NaN below the diagonal reaches pivot 4
    got, expected = _run_both("f64", a.shape, True, a)
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all()
    assert not np.isnan(got[0]).any()
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-12, atol=0)


def test_only_the_named_triangle_is_read():
    rng = np.random.default_rng(8)
    a = _spd(rng, 2, 9)
    for lower in (True, False):
        poisoned = a.copy()
        other = np.triu_indices(9, 1) if lower else np.tril_indices(9, -1)
        poisoned[:, other[0], other[1]] = np.nan
        got, expected = _run_both("f64", a.shape, lower, poisoned)
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dims", [(0, 4, 4), (2, 0, 0), (0, 0)])
def test_empty_shapes(dims):
    a = np.ones(dims, np.float32)
    got, expected = _run_both("f32", dims, True, a)
    assert got.shape == expected.shape == dims


def test_more_rows_than_threads_stride_over_the_rows(monkeypatch):
    from hlort.codegen.gpu import cholesky_schedule

    monkeypatch.setattr(cholesky_schedule, "MAX_THREADS", 32)
    rng = np.random.default_rng(2)
    a = _spd(rng, 2, 45)
    got, expected = _run_both("f64", a.shape, True, a)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", ["c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_complex_failed_pivots_nan_inputs_and_the_unread_triangle(dtype, lower):
    """A failed matrix is NaN + 0i (NaN - 0i for an upper factor: the adjoint), a NaN
    imaginary part below the diagonal reaches the later pivots, the other triangle (NaN here)
    is never read; the zero triangle of a complex upper factor has -0 imaginary parts, as the
    interpreter's conj leaves them (compared bit for bit where the sums are exact)."""
    rng = np.random.default_rng(9)
    a = _spd(rng, 3, 6, is_complex=True)
    a[1, 2, 2] = -50.0  # not positive definite from column 2 on
    row, col = (4, 1) if lower else (1, 4)
    a[2, row, col] = complex(1.0, np.nan)
    other = np.triu_indices(6, 1) if lower else np.tril_indices(6, -1)
    a[0, other[0], other[1]] = complex(np.nan, np.inf)
    got, expected = _run_both(dtype, a.shape, lower, a.astype(NUMPY[dtype]))
    assert np.isnan(got[1]).all() and np.isnan(got[2]).all() and not np.isnan(got[0]).any()
    assert np.array_equal(np.signbit(got[1].imag), np.signbit(expected[1].imag))
    assert np.array_equal(np.signbit(got[0].imag), np.signbit(expected[0].imag))
    np.testing.assert_allclose(got[0], expected[0], rtol=RTOL[dtype], atol=0)
