"""JAX's LAPACK calls that map onto GPU kernels, on the host simulator against the interpreter
(``hlort.interpreter.lapack_reference``, which defines them):

- ``lapack_?potrf_ffi`` is the Cholesky kernel with LAPACK's outputs: s, d, c, z; ``uplo`` L and
  U; unbatched, batched and two batch dimensions; ``info`` exactly (0, or the 1-based column of
  the first pivot that is not strictly positive, NaN included) and the failed matrices' named
  triangle NaN (JAX's rule), the other triangle the operand's bit for bit (NaN and inf there
  too), empty matrices (``info`` 0) and an empty batch;
- ``lapack_?trsm_ffi`` is the substitution kernel: every ``side`` x ``uplo`` x ``trans_x`` x
  ``diag`` for s, d, c, z, batched, with NaN / inf / -0.0 on the right-hand side and a zero
  pivot;
- JAX's own programs (tests/real_programs: cholesky, batched cholesky, triangular solve,
  solve, inverse) match JAX's results with no potrf or trsm host step (getrf stays one).

Tolerances: the factorization sums in ascending k from +0 in f64 where NumPy pairs terms its own
way, so as tests/gpu/test_cholesky_simulated.py: relative 1e-12 for f64 / c128 (condition number
< 100) and one rounding of the result type (eps of f32) for s / c. The solves compute in the
interpreter's order: bit for bit."""

import os
import sys

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value
from hlort.text.parser import parse_module

NUMPY = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}
PREFIX = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}
RTOL = {"f32": 2.0**-23, "f64": 1e-12, "c64": 2.0**-23, "c128": 1e-12}


def _run(text: str, args: list[np.ndarray], schedule: str) -> tuple[list, list]:
    module = parse_module(text)
    expected = [np.asarray(e) for e in flatten_value(evaluate(module, args))]
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert schedule in {k.schedule for k in program.kernels}
    return HostSimRunner(program).run(args), expected


def _potrf_text(t: str, dims: tuple[int, ...], lower: bool) -> str:
    shape = f"{t}[{','.join(map(str, dims))}]"
    info = f"s32[{','.join(map(str, dims[:-2]))}]"
    uplo = ord("L" if lower else "U")
    return f"""HloModule p
ENTRY main {{
  a = {shape} parameter(0)
  ROOT r = ({shape}, {info}) custom-call(a), custom_call_target="lapack_{PREFIX[t]}potrf_ffi", \
backend_config={{uplo = {uplo} : ui8}}, api_version=API_VERSION_TYPED_FFI
}}
"""


def _spd(rng, batch: tuple[int, ...], n: int, is_complex: bool) -> np.ndarray:
    """Positive definite (Hermitian) matrices of condition number < 100."""
    g = rng.standard_normal((*batch, n, n))
    if is_complex:
        g = g + 1j * rng.standard_normal((*batch, n, n))
    return g @ np.conj(np.swapaxes(g, -1, -2)) + n * np.eye(n)


def _check_potrf(t, a, lower):
    (factor, info), (want, want_info) = _run(_potrf_text(t, a.shape, lower), [a], "cholesky")
    assert info.dtype == np.int32 and np.array_equal(info, want_info)
    n = a.shape[-1]
    other = np.triu(np.ones((n, n), bool), 1) if lower else np.tril(np.ones((n, n), bool), -1)
    other = np.broadcast_to(other, a.shape)
    assert factor[other].tobytes() == want[other].tobytes() == a[other].tobytes()
    named = ~other
    assert np.array_equal(np.isnan(factor[named]), np.isnan(want[named]))
    wide = np.complex128 if t.startswith("c") else np.float64
    ok = ~np.isnan(want) & named
    np.testing.assert_allclose(factor[ok].astype(wide), want[ok].astype(wide), rtol=RTOL[t], atol=0)
    return info


@pytest.mark.parametrize("t", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("batch,n", [((), 5), ((3,), 1), ((3,), 40), ((2, 2), 6)])
def test_potrf_factors_keep_the_other_triangle_and_report_info(t, lower, batch, n):
    rng = np.random.default_rng(n + len(batch))
    a = _spd(rng, batch, n, t.startswith("c")).astype(NUMPY[t])
    info = _check_potrf(t, a, lower)
    assert not info.any()


@pytest.mark.parametrize("t", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_potrf_failed_pivots_give_lapacks_info_and_a_nan_triangle(t, lower):
    rng = np.random.default_rng(4)
    a = _spd(rng, (5,), 6, t.startswith("c"))
    a[1, 2, 2] = -50.0  # not positive definite from column 2: info 3
    row, col = (4, 1) if lower else (1, 4)
    a[2, row, col] = np.nan  # reaches pivot 4 (info 5) through the named triangle
    a[3, 0, 0] = 0.0  # the first pivot is zero: info 1
    a[4, 5, 5] = np.nan  # the last pivot is NaN: info 6
    other = np.triu_indices(6, 1) if lower else np.tril_indices(6, -1)
    a[0, other[0], other[1]] = np.inf  # the other triangle is never read, only kept
    a[0, other[0][0], other[1][0]] = np.nan
    info = _check_potrf(t, a.astype(NUMPY[t]), lower)
    assert info.tolist() == [0, 3, 5, 1, 6]


@pytest.mark.parametrize("dims", [(4, 0, 0), (0, 3, 3), (0, 0)])
def test_potrf_empty_matrices_and_batches(dims):
    a = np.ones(dims, np.float32)
    (factor, info), (want, want_info) = _run(_potrf_text("f32", dims, True), [a], "cholesky")
    assert factor.shape == dims and info.shape == dims[:-2]
    assert np.array_equal(info, want_info) and not info.any()


def _trsm_text(t, a_dims, b_dims, side, uplo, trans, diag) -> str:
    a = f"{t}[{','.join(map(str, a_dims))}]"
    b = f"{t}[{','.join(map(str, b_dims))}]"
    config = ", ".join(
        f"{k} = {ord(v)} : ui8"
        for k, v in (("diag", diag), ("side", side), ("trans_x", trans), ("uplo", uplo))
    )
    return f"""HloModule t
ENTRY main {{
  a = {a} parameter(0)
  b = {b} parameter(1)
  ROOT x = {b} custom-call(a, b), custom_call_target="lapack_{PREFIX[t]}trsm_ffi", \
backend_config={{{config}}}, api_version=API_VERSION_TYPED_FFI
}}
"""


def _values(rng, dims, t):
    x = rng.standard_normal(dims)
    if t.startswith("c"):
        x = x + 1j * rng.standard_normal(dims)
    return x


@pytest.mark.parametrize("t", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("side", ["L", "R"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("trans", ["N", "T", "C"])
@pytest.mark.parametrize("diag", ["N", "U"])
def test_trsm_every_form_is_bit_exact(t, side, uplo, trans, diag):
    rng = np.random.default_rng(ord(side) + ord(uplo) * 3 + ord(trans) * 7 + ord(diag))
    n, m = 6, 4
    b_dims = (2, n, m) if side == "L" else (2, m, n)
    a = _values(rng, (2, n, n), t) + 4 * np.eye(n)
    b = _values(rng, b_dims, t)
    b[0, 0, 0], b[1, -1, -1] = np.nan, np.inf
    b[0, 1, 1] = -0.0
    text = _trsm_text(t, a.shape, b_dims, side, uplo, trans, diag)
    args = [a.astype(NUMPY[t]), b.astype(NUMPY[t])]
    (got,), (want,) = _run(text, args, "triangular_solve")
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()


def test_trsm_zero_pivot_and_unbatched():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((5, 5))
    a[2, 2] = 0.0
    b = rng.standard_normal((5, 3))
    text = _trsm_text("f64", a.shape, b.shape, "L", "L", "N", "N")
    (got,), (want,) = _run(text, [a, b], "triangular_solve")
    assert not np.isfinite(got[2:]).all() and got.tobytes() == want.tobytes()


sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "real_programs"))
PROGRAMS = {
    "linalg_cholesky": 0,
    "linalg_cholesky_batched": 0,
    "linalg_triangular_solve": 0,
    "linalg_solve": 1,  # getrf
    "linalg_inv": 1,  # getrf
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_jax_programs_match_jax_with_only_getrf_on_the_host(name):
    from test_real_programs import HERE, ULPS, _load, assert_matches

    from hlort.runtime.program import parse_program

    folder = os.path.join(HERE, name)
    module = parse_program(open(os.path.join(folder, "module.mlir")).read())
    args = _load(os.path.join(folder, "inputs.npz"), "arg")
    expected = _load(os.path.join(folder, "expected.npz"), "out")
    program = simulated_program(module)
    assert len(program.fallbacks) == PROGRAMS[name], program.fallback_summary()
    assert all("getrf" in f.reason for f in program.fallbacks), program.fallback_summary()
    got = HostSimRunner(program).run(args)
    for i, (g, w) in enumerate(zip(got, expected, strict=True)):
        eps = float(np.finfo(w.dtype).eps) if w.dtype.kind in "fc" else 0.0
        assert_matches(g, w, ULPS * eps, f"{name} out{i}")


def test_trsm_with_a_shared_matrix_stays_a_host_step_naming_why():
    """JAX broadcasts ``a`` to ``b``'s batch before the call; an unbatched ``a`` beside a batched
    ``b`` (which the target's shape rule admits) is no substitution kernel's: a host step."""
    rng = np.random.default_rng(6)
    a = rng.standard_normal((4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((2, 4, 3))
    module = parse_module(_trsm_text("f64", a.shape, b.shape, "L", "L", "N", "N"))
    program = simulated_program(module)
    (fallback,) = program.fallbacks
    assert fallback.opcode == "custom-call" and "is no solve" in fallback.reason
    (got,) = HostSimRunner(program).run([a, b])
    (want,) = flatten_value(evaluate(module, [a, b]))
    assert got.tobytes() == np.asarray(want).tobytes()
