"""Triangular solves as one GPU substitution kernel (triangular_schedule.py), on the host simulator
against the interpreter: every real conformance case, every form (left/right, lower/upper,
transposed, unit diagonal) for f16/bf16/f32/f64, specials in the right-hand side and on the
diagonal (a zero pivot), empty and unbatched shapes; c64 and c128 the same (NumPy's complex
products and division, an adjoint conjugating). The kernel computes in f64 in the interpreter's
order, so results match bit for bit here; where NumPy's einsum pairs partial sums differently
the difference is one rounding of that sum, so the comparison allows the conformance suite's
stated tolerance for the case."""

import ml_dtypes
import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "triangular-solve"]
NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64}
NUMPY.update(c64=np.complex64, c128=np.complex128)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    program = simulated_program(case.module)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"triangular_solve"}
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem


def _solve_text(dtype, a_dims, b_dims, left, lower, unit, transpose):
    a = f"{dtype}[{','.join(map(str, a_dims))}]"
    b = f"{dtype}[{','.join(map(str, b_dims))}]"
    flags = f"left_side={str(left).lower()}, lower={str(lower).lower()}"
    flags += f", unit_diagonal={str(unit).lower()}, transpose_a={transpose}"
    return f"""HloModule ts
ENTRY main {{
  a = {a} parameter(0)
  b = {b} parameter(1)
  ROOT x = {b} triangular-solve(a, b), {flags}
}}
"""


def _run_both(text, a, b):
    module = parse_module(text)
    expected = np.asarray(flatten_value(evaluate(module, [a, b]))[0])
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    (got,) = HostSimRunner(program).run([a, b])
    return got, expected


def _random(rng, dims, dtype):
    x = rng.standard_normal(dims)
    if dtype.startswith("c"):
        x = x + 1j * rng.standard_normal(dims)
    return x


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("transpose", ["NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("left", [False, True])
def test_every_form_matches_the_interpreter_bit_for_bit(dtype, transpose, unit, lower, left):
    n = 6 if left else 4
    b_dims = (3, 6, 4)
    rng = np.random.default_rng(11)
    a = (_random(rng, (3, n, n), dtype) + 4 * np.eye(n)).astype(NUMPY[dtype])
    b = _random(rng, b_dims, dtype).astype(NUMPY[dtype])
    text = _solve_text(dtype, a.shape, b_dims, left, lower, unit, transpose)
    got, expected = _run_both(text, a, b)
    assert got.tobytes() == expected.tobytes()


def test_specials_and_a_zero_pivot_propagate_as_ieee_says():
    a = np.array([[2.0, 0, 0], [1.0, 0.0, 0], [-0.0, 3.0, 4.0]], np.float32)  # pivot 1 is zero
    b = np.array([[np.nan, 1.0], [np.inf, -0.0], [1.0, -np.inf]], np.float32)
    text = _solve_text("f32", (3, 3), (3, 2), True, True, False, "NO_TRANSPOSE")
    got, expected = _run_both(text, a, b)
    assert got.tobytes() == expected.tobytes()
    assert np.isnan(got).any() and np.isinf(got).any()


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_complex_specials_and_zero_pivots_divide_as_numpy(dtype):
    """NaN and infinities in either part of b, a 0 + 0i pivot (NumPy's divide-by-zero branch)
    and a -0 pivot part, bit for bit (NaN against any NaN: no payloads are defined)."""
    a = np.array(
        [[2 - 1j, 0, 0], [1 + 1j, 0j, 0], [complex(-0.0, 1), 3, complex(-0.0, 4)]], NUMPY[dtype]
    )
    b = np.array(
        [[complex(np.nan, 1), 1], [complex(2, np.inf), -0.0], [1, complex(-np.inf, 0)]],
        NUMPY[dtype],
    )
    text = _solve_text(dtype, (3, 3), (3, 2), True, True, False, "ADJOINT")
    got, expected = _run_both(text, a, b)
    problem = describe_mismatch(got, expected, "exact")
    assert problem is None, problem
    assert np.isnan(got).any() and np.isinf(got).any()
    for unit in (False, True):  # the lower (unit) solve with the zero pivot at row 1
        text = _solve_text(dtype, (3, 3), (3, 2), True, False, unit, "TRANSPOSE")
        got, expected = _run_both(text, a, b)
        assert describe_mismatch(got, expected, "exact") is None


def test_only_the_named_triangle_and_no_unit_diagonal_are_read():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 5)).astype(np.float64) + 5 * np.eye(5)
    poisoned = a.copy()
    poisoned[np.triu_indices(5, 0)] = np.nan  # upper triangle and diagonal
    b = rng.standard_normal((5, 2))
    text = _solve_text("f64", (5, 5), (5, 2), True, True, True, "NO_TRANSPOSE")
    got, expected = _run_both(text, poisoned, b)
    assert not np.isnan(got).any()
    assert got.tobytes() == expected.tobytes()


@pytest.mark.parametrize(
    "a_dims,b_dims,left",
    [((0, 4, 4), (0, 4, 2), True), ((2, 0, 0), (2, 0, 3), True), ((4, 4), (4, 0), True)],
)
def test_empty_shapes(a_dims, b_dims, left):
    a = np.ones(a_dims, np.float32)
    b = np.ones(b_dims, np.float32)
    got, expected = _run_both(
        _solve_text("f32", a_dims, b_dims, left, True, False, "TRANSPOSE"), a, b
    )
    assert got.shape == expected.shape == b_dims


def test_complex_division_is_numpys_on_many_values():
    """1 x 1 systems: each solution is b / a, so this checks the kernel's complex division
    (NumPy's Smith division with a reciprocal) on 600 divisors: random magnitudes, zero and
    signed-zero parts, 0 + 0i, infinities and NaN; exact (NaN against any NaN)."""
    rng = np.random.default_rng(17)
    n = 600
    parts = [rng.standard_normal(n) * np.exp2(rng.integers(-40, 40, n)) for _ in range(4)]
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0])
    for p in parts:
        hit = rng.random(n) < 0.15
        p[hit] = rng.choice(specials, hit.sum())
    a = np.empty((n, 1, 1), np.complex128)
    b = np.empty((n, 1, 1), np.complex128)
    a.real, a.imag, b.real, b.imag = (p.reshape(n, 1, 1) for p in parts)
    a[:5] = 0j  # 0 + 0i divisors
    text = _solve_text("c128", (n, 1, 1), (n, 1, 1), True, True, False, "NO_TRANSPOSE")
    got, expected = _run_both(text, a, b)
    problem = describe_mismatch(got, expected, "exact")
    assert problem is None, problem
