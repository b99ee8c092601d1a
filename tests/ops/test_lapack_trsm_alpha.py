"""``lapack_?trsm_ffi`` with JAX's older third operand ``alpha``: ``op(a) x = alpha b``.

JAX lowered ``triangular_solve`` on CPU to ``lapack_?trsm_ffi(a, b, alpha)`` (alpha a rank-0
constant 1) before it dropped the operand; XLA's kernel passes alpha to BLAS ``?trsm``, which
scales ``b`` first and, for alpha = 0, returns zeros without reading ``a`` or ``b``. Checked
on the interpreter (the reference) and the cpu plugin (BLAS itself), through the builder and
through the StableHLO text of that lowering; forms hlort does not take are clear errors.
Tolerance: the solve's residual ``|op(a) x - alpha b|`` within 10 eps of the operand type, and
x against ``alpha`` times the alpha-free solve within 10 eps of |x|.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import hlort
from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.errors import HlortError, InvalidArgument

PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
EPS = {np.float32: 1e-6, np.float64: 1e-15, np.complex64: 1e-6, np.complex128: 1e-15}
PLATFORMS = ["interpreter", "cpu"]


def _module(t, a_dims, b_dims, alpha_dims=(), side="L", uplo="L", trans="N", diag="N"):
    dt = dtypes.from_numpy(np.dtype(t))
    b = Builder("trsm")
    params = [b.parameter(shape.array(dt, a_dims)), b.parameter(shape.array(dt, b_dims))]
    if alpha_dims is not None:
        params.append(b.parameter(shape.array(dt, alpha_dims)))
    attrs = {"side": side, "uplo": uplo, "trans_x": trans, "diag": diag}
    config = "{" + ", ".join(f"{k} = {ord(v)} : ui8" for k, v in attrs.items()) + "}"
    out = shape.array(dt, b_dims)
    return b.build(b.custom_call(f"lapack_{PREFIX[t]}trsm_ffi", params, out, backend_config=config))


def _operands(t, side, batch=(2,)):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((*batch, 4, 4)) + 4 * np.eye(4)
    b = rng.standard_normal((*batch, 4, 3) if side == "L" else (*batch, 3, 4))
    if np.dtype(t).kind == "c":
        a, b = a + 1j * rng.standard_normal(a.shape), b + 1j * rng.standard_normal(b.shape)
    return a.astype(t), b.astype(t)


def _op(a, uplo, trans, diag):
    tri = np.tril(a) if uplo == "L" else np.triu(a)
    if diag == "U":
        tri = tri - tri * np.eye(a.shape[-1]) + np.eye(a.shape[-1])
    if trans == "N":
        return tri
    tri = np.swapaxes(tri, -1, -2)
    return np.conj(tri) if trans == "C" else tri


FORMS = [("L", "L", "N", "N"), ("L", "U", "T", "U"), ("R", "L", "C", "N"), ("R", "U", "N", "U")]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", list(PREFIX), ids=lambda t: t.__name__)
@pytest.mark.parametrize("side, uplo, trans, diag", FORMS)
def test_alpha_scales_the_right_hand_side(platform, t, side, uplo, trans, diag):
    a, b = _operands(t, side)
    alpha = np.asarray(-2.5 + 0.75j if np.dtype(t).kind == "c" else -2.5, t)
    form = {"side": side, "uplo": uplo, "trans": trans, "diag": diag}
    with_alpha = hlort.compile(_module(t, a.shape, b.shape, (), **form), platform)
    without = hlort.compile(_module(t, a.shape, b.shape, None, **form), platform)
    x = np.asarray(with_alpha(a, b, alpha))
    assert x.dtype == t and x.shape == b.shape
    op = _op(a.astype(np.complex128), uplo, trans, diag)
    residual = (op @ x if side == "L" else x @ op) - complex(alpha) * b
    scale = np.max(np.abs(op)) * np.max(np.abs(x)) + np.max(np.abs(b)) * abs(complex(alpha))
    assert np.max(np.abs(residual)) <= 10 * EPS[t] * scale
    plain = np.asarray(without(a, b))
    np.testing.assert_allclose(x, alpha * plain, rtol=0, atol=10 * EPS[t] * np.max(np.abs(x)))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", [np.float32, np.complex128], ids=lambda t: t.__name__)
def test_alpha_zero_gives_zeros_without_reading_the_operands(platform, t):
    a, b = _operands(t, "L")
    a[0, 1, 1] = 0  # a singular matrix: a solve would give inf / NaN
    a[1, 2, 0] = b[1, 0, 0] = np.nan
    exe = hlort.compile(_module(t, a.shape, b.shape, ()), platform)
    x = np.asarray(exe(a, b, np.zeros((), t)))
    np.testing.assert_array_equal(x, np.zeros(b.shape, t))
    assert not np.signbit(x.real).any()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_alpha_one_is_the_two_operand_call(platform):
    a, b = _operands(np.float64, "R", batch=())
    three = hlort.compile(_module(np.float64, a.shape, b.shape, (), side="R"), platform)
    two = hlort.compile(_module(np.float64, a.shape, b.shape, None, side="R"), platform)
    np.testing.assert_array_equal(np.asarray(three(a, b, np.float64(1))), np.asarray(two(a, b)))


# JAX's CPU lowering when it still passed alpha (jaxlib's trsm_hlo: operands [a, b, alpha],
# alpha's layout [], b aliased to the result), with a batch dimension.
OLD_LOWERING = """module @jit_solve {
  func.func public @main(%arg0: tensor<2x4x4xf32>, %arg1: tensor<2x4x3xf32>) -> tensor<2x4x3xf32> {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %0 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %arg1, %cst) {api_version = 4 : i32, \
mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 85 : ui8}, \
operand_layouts = [dense<[1, 2, 0]> : tensor<3xindex>, dense<[1, 2, 0]> : tensor<3xindex>, \
dense<> : tensor<0xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<\
output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], \
result_layouts = [dense<[1, 2, 0]> : tensor<3xindex>]} : \
(tensor<2x4x4xf32>, tensor<2x4x3xf32>, tensor<f32>) -> tensor<2x4x3xf32>
    return %0 : tensor<2x4x3xf32>
  }
}
"""


@pytest.mark.parametrize("platform", [*PLATFORMS, "tpusim"])
def test_jax_older_lowering_with_alpha_imports_and_runs(platform, monkeypatch):
    monkeypatch.setenv("HLORT_FALLBACK", "error")
    a, b = _operands(np.float32, "L")
    x = np.asarray(hlort.compile(OLD_LOWERING, platform)(a, b))
    op = _op(a.astype(np.float64), "U", "T", "N")
    residual = op @ x - 3 * b
    assert np.max(np.abs(residual)) <= 10 * EPS[np.float32] * 3 * np.max(np.abs(op @ x))


@pytest.mark.parametrize(
    "alpha_dims, dtype, message",
    [
        ((2,), np.float32, "operand 2 (alpha) must be a f32 scalar (rank 0), got f32[2]"),
        ((), np.float64, "operand 2 (alpha) must be a f32 scalar"),
    ],
)
def test_an_alpha_that_is_not_one_scalar_of_the_type_is_invalid(alpha_dims, dtype, message):
    b = Builder("bad")
    f32 = dtypes.F32
    params = [b.parameter(shape.array(f32, (4, 4))), b.parameter(shape.array(f32, (4, 3)))]
    params.append(b.parameter(shape.array(dtypes.from_numpy(np.dtype(dtype)), alpha_dims)))
    with pytest.raises(InvalidArgument, match=re.escape(message)):
        b.build(b.custom_call("lapack_strsm_ffi", params, shape.array(f32, (4, 3))))


def test_more_operands_name_both_counts():
    b = Builder("bad")
    f32 = dtypes.F32
    params = [b.parameter(shape.array(f32, dims)) for dims in ((4, 4), (4, 3), (), ())]
    with pytest.raises(HlortError, match="takes 2 or 3 operand"):
        b.build(b.custom_call("lapack_strsm_ffi", params, shape.array(f32, (4, 3))))


def test_the_gpu_substitution_kernel_leaves_the_alpha_form_to_the_host():
    """The GPU plugins map a 2-operand trsm onto their substitution kernel, which has no
    alpha: the 3-operand call is a host step that says why (it was an unpacking error)."""
    from hlort.codegen.gpu.custom_call_steps import as_triangular_solve

    instr = _module(np.float32, (4, 4), (4, 3), ()).entry.root
    solve, why = as_triangular_solve(instr)
    assert solve is None and "alpha" in why
    solve, why = as_triangular_solve(_module(np.float32, (4, 4), (4, 3), None).entry.root)
    assert solve is not None and why == ""
