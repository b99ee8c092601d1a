"""The LAPACK custom calls JAX emits for jnp.linalg on CPU: what the interpreter computes.

Each routine is checked against the identity it must satisfy (P A = L U, Q R = A, A v = v w,
U S V^H = A, op(A) X = B) and against LAPACK's conventions JAX's surrounding code depends on
(1-based pivots, info, the untouched triangle, ascending eigenvalues), on f32, f64, c64 and
c128, batched, with the attributes read from both spellings of a typed-FFI backend_config.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.errors import HlortError, InvalidArgument
from hlort.ffi_attributes import ffi_attributes_text, parse_ffi_attributes
from hlort.interpreter import evaluate
from hlort.ir import verify_module
from hlort.shape import TupleShape
from hlort.text.printer import print_module

PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
TYPES = list(PREFIX)
EPS = {np.float32: 1e-5, np.float64: 1e-12, np.complex64: 1e-5, np.complex128: 1e-12}


def _dt(t) -> dtypes.DType:
    return dtypes.from_numpy(np.dtype(t))


def _real(t):
    return np.float32 if t in (np.float32, np.complex64) else np.float64


def random_matrix(rng, dims, t):
    a = rng.standard_normal(dims)
    if np.dtype(t).kind == "c":
        a = a + 1j * rng.standard_normal(dims)
    return a.astype(t)


def call(routine, t, operands, results, **attributes):
    """Evaluate one ``lapack_<p><routine>_ffi`` on ``operands`` with ``results`` shapes."""
    b = Builder(routine)
    params = [b.parameter(shape.array(_dt(o.dtype), o.shape)) for o in operands]
    out = TupleShape(tuple(results)) if len(results) > 1 else results[0]
    config = "{" + ", ".join(f"{k} = {ord(v)} : ui8" for k, v in attributes.items()) + "}"
    module = b.build(
        b.custom_call(f"lapack_{PREFIX[t]}{routine}_ffi", params, out, backend_config=config)
    )
    verify_module(module)
    value = evaluate(module, list(operands))
    return value if isinstance(value, tuple) else (value,)


def _mat(t, *dims):
    return shape.array(_dt(t), dims)


def _info(*batch):
    return shape.array(dtypes.S32, batch)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_potrf_factors_one_triangle_and_keeps_the_other(t, uplo):
    rng = np.random.default_rng(0)
    g = random_matrix(rng, (2, 4, 4), t)
    a = (g @ np.conj(np.swapaxes(g, -1, -2)) + 4 * np.eye(4)).astype(t)
    factor, info = call("potrf", t, [a], [_mat(t, 2, 4, 4), _info(2)], uplo=uplo)
    assert info.dtype == np.int32 and info.tolist() == [0, 0]
    lower = uplo == "L"
    tri = np.tril if lower else np.triu
    f = tri(factor)
    product = (
        f @ np.conj(np.swapaxes(f, -1, -2)) if lower else (np.conj(np.swapaxes(f, -1, -2)) @ f)
    )
    np.testing.assert_allclose(product, a, rtol=EPS[t] * 10, atol=EPS[t] * 10)
    other = np.triu(np.ones((4, 4), bool), 1) if lower else np.tril(np.ones((4, 4), bool), -1)
    np.testing.assert_array_equal(factor[:, other], a[:, other])  # LAPACK leaves it as it was


def test_potrf_reports_the_failing_column():
    a = np.diag([4.0, 1.0, -1.0, 2.0]).astype(np.float32)
    factor, info = call("potrf", np.float32, [a], [_mat(np.float32, 4, 4), _info()], uplo="L")
    assert int(info) == 3
    assert np.isnan(factor[np.tril_indices(4)]).all()


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("dims", [(4, 4), (5, 3), (3, 5)])
def test_getrf_is_lu_with_one_based_partial_pivoting(t, dims):
    rng = np.random.default_rng(1)
    a = random_matrix(rng, (2, *dims), t)
    m, n = dims
    k = min(m, n)
    lu, pivots, info = call("getrf", t, [a], [_mat(t, 2, m, n), _info(2, k), _info(2)])
    assert pivots.dtype == np.int32 and pivots.min() >= 1 and pivots.max() <= m
    assert info.tolist() == [0, 0]
    for i in range(2):
        perm = np.arange(m)
        for j, p in enumerate(pivots[i] - 1):
            perm[[j, p]] = perm[[p, j]]
        lower = np.tril(lu[i][:, :k], -1) + np.eye(m, k)
        upper = np.triu(lu[i][:k, :])
        np.testing.assert_allclose(lower @ upper, a[i][perm], rtol=EPS[t] * 10, atol=EPS[t] * 10)
        # the pivot has the column's largest |re| + |im|, so |l| <= 1 (real), <= sqrt 2 (complex)
        bound = np.sqrt(2) if np.dtype(t).kind == "c" else 1
        assert (np.abs(lower) <= bound * (1 + EPS[t])).all()


def test_getrf_reports_a_zero_pivot_and_completes():
    a = np.array([[0.0, 1.0], [0.0, 2.0]], np.float64)
    lu, pivots, info = call("getrf", np.float64, [a], [_mat(np.float64, 2, 2), _info(2), _info()])
    assert int(info) == 1 and pivots.tolist() == [1, 2]
    np.testing.assert_array_equal(lu, [[0.0, 1.0], [0.0, 2.0]])


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("dims", [(5, 3), (3, 3), (3, 5)])
def test_geqrf_then_orgqr_give_q_and_r(t, dims):
    rng = np.random.default_rng(2)
    a = random_matrix(rng, dims, t)
    m, n = dims
    k = min(m, n)
    packed, tau = call("geqrf", t, [a], [_mat(t, m, n), _mat(t, k)])
    r = np.triu(packed)[:k]
    name = "ungqr" if np.dtype(t).kind == "c" else "orgqr"
    (q,) = call(name, t, [packed[:, :k].copy(), tau], [_mat(t, m, k)])
    np.testing.assert_allclose(q @ r, a, rtol=EPS[t] * 10, atol=EPS[t] * 10)
    np.testing.assert_allclose(np.conj(q.T) @ q, np.eye(k), atol=EPS[t] * 10)
    ref_r = np.linalg.qr(a.astype(np.complex128 if np.dtype(t).kind == "c" else np.float64))[1]
    np.testing.assert_allclose(r, ref_r, rtol=EPS[t] * 10, atol=EPS[t] * 10)  # LAPACK's signs


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_syevd_heevd_ascending_values_and_vectors_from_one_triangle(t, uplo):
    rng = np.random.default_rng(3)
    g = random_matrix(rng, (2, 4, 4), t)
    a = (g + np.conj(np.swapaxes(g, -1, -2))).astype(t)
    garbage = a.copy()
    other = np.triu(np.ones((4, 4), bool), 1) if uplo == "L" else np.tril(np.ones((4, 4), bool), -1)
    garbage[:, other] = 99  # never read
    name = "heevd" if np.dtype(t).kind == "c" else "syevd"
    v, w, info = call(
        name, t, [garbage], [_mat(t, 2, 4, 4), _mat(_real(t), 2, 4), _info(2)], mode="V", uplo=uplo
    )
    assert info.tolist() == [0, 0] and w.dtype == _real(t)
    assert (np.diff(w, axis=-1) >= 0).all()
    np.testing.assert_allclose(a @ v, v * w[:, None, :], rtol=EPS[t] * 20, atol=EPS[t] * 20)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("routine", ["gesdd", "gesvd"])
@pytest.mark.parametrize("mode", ["A", "S", "N"])
def test_svd_modes(t, routine, mode):
    rng = np.random.default_rng(4)
    m, n = 5, 3
    a = random_matrix(rng, (m, n), t)
    u_cols, vt_rows = (m, n) if mode == "A" else (n, n)
    results = [_mat(t, m, n), _mat(_real(t), n), _mat(t, m, u_cols), _mat(t, vt_rows, n), _info()]
    _, s, u, vt, info = call(routine, t, [a], results, mode=mode)
    assert int(info) == 0 and (np.diff(s) <= 0).all()
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=EPS[t] * 10)
    if mode == "N":
        assert not u.any() and not vt.any()
        return
    np.testing.assert_allclose((u[:, :n] * s) @ vt[:n], a, rtol=EPS[t] * 10, atol=EPS[t] * 10)
    np.testing.assert_allclose(np.conj(u.T) @ u, np.eye(u_cols), atol=EPS[t] * 10)


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize(
    "side, uplo, trans, diag",
    [
        ("L", "L", "N", "N"),
        ("L", "U", "T", "U"),
        ("R", "L", "C", "N"),
        ("R", "U", "N", "U"),
    ],
)
def test_trsm_solves_with_one_triangle(t, side, uplo, trans, diag):
    rng = np.random.default_rng(5)
    a = random_matrix(rng, (3, 3), t) + 3 * np.eye(3, dtype=t)
    b = random_matrix(rng, (3, 2) if side == "L" else (2, 3), t)
    (x,) = call(
        "trsm", t, [a, b], [_mat(t, *b.shape)], side=side, uplo=uplo, trans_x=trans, diag=diag
    )
    tri = np.tril(a) if uplo == "L" else np.triu(a)
    if diag == "U":
        tri = tri - np.diag(np.diag(tri)) + np.eye(3)
    op = {"N": tri, "T": tri.T, "C": np.conj(tri.T)}[trans]
    got = op @ x if side == "L" else x @ op
    np.testing.assert_allclose(got, b, rtol=EPS[t] * 10, atol=EPS[t] * 10)


def test_attributes_from_either_spelling():
    assert parse_ffi_attributes("{uplo = 76 : ui8, mode = 86 : ui8}", "c") == {
        "uplo": 76,
        "mode": 86,
    }
    assert parse_ffi_attributes(ffi_attributes_text({"uplo": 85, "x": 1.5, "s": 'a"b'}), "c") == {
        "uplo": 85,
        "x": 1.5,
        "s": 'a"b',
    }
    assert parse_ffi_attributes("", "c") == {}
    with pytest.raises(InvalidArgument, match="not a typed-FFI attribute dictionary"):
        parse_ffi_attributes("1,1,100", "c")


def test_wrong_operand_type_is_invalid():
    b = Builder("bad")
    x = b.parameter(shape.array(dtypes.F64, (3, 3)))
    with pytest.raises(HlortError, match="must be a f32 matrix"):
        b.custom_call("lapack_spotrf_ffi", [x], TupleShape((x.shape, _info())))


UPPER_CHOLESKY_MLIR = """
func.func public @main(%arg0: tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>) {
  %0:2 = stablehlo.custom_call @lapack_dpotrf_ffi(%arg0) {backend_config = "",
    mhlo.backend_config = {uplo = 85 : ui8}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
    result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
    : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<i32>)
  return %0#0, %0#1 : tensor<2x2xf64>, tensor<i32>
}
"""


def test_stablehlo_keeps_the_typed_ffi_attributes():
    """``mhlo.backend_config`` becomes the call's backend_config, as XLA's HLO text has it."""
    from hlort.importers.stablehlo import import_stablehlo

    result = import_stablehlo(UPPER_CHOLESKY_MLIR)
    module = getattr(result, "module", result)
    a = np.array([[4.0, 2.0], [-7.0, 5.0]])  # the lower triangle is never read for 'U'
    factor, info = evaluate(module, [a])
    assert int(info) == 0
    np.testing.assert_allclose(factor, [[2.0, 1.0], [-7.0, 2.0]])
    text = print_module(module)
    assert "backend_config={uplo = 85 : ui8}" in text  # typed, as XLA's HLO text has it


def _cholesky_mlir(operand_layout: str, result_layout: str) -> str:
    return UPPER_CHOLESKY_MLIR.replace(
        "operand_layouts = [dense<[0, 1]>", f"operand_layouts = [dense<{operand_layout}>"
    ).replace("result_layouts = [dense<[0, 1]>", f"result_layouts = [dense<{result_layout}>")


def test_custom_call_layouts_survive_import_print_and_the_proto_round_trip():
    """StableHLO's operand_layouts / result_layouts become XLA's operand_layout_constraints and
    the call's result layout (were dropped): in the printed HLO, and read back from the proto."""
    from hlort.importers.stablehlo import import_stablehlo
    from hlort.text.hlo_proto_reader import module_from_hlo_proto
    from hlort.text.hlo_proto_writer import hlo_module_proto_bytes

    module = getattr(import_stablehlo(UPPER_CHOLESKY_MLIR), "module", None)
    module = module or import_stablehlo(UPPER_CHOLESKY_MLIR)
    text = print_module(module)
    assert "(f64[2,2]{0,1}, s32[]) custom-call(" in text, text
    assert "operand_layout_constraints={f64[2,2]{0,1}}" in text, text
    assert "->(f64[2,2]{1,0}, s32[])" in text  # what reads the results sees logical arrays
    back = print_module(module_from_hlo_proto(hlo_module_proto_bytes(module)))
    assert "operand_layout_constraints={f64[2,2]{0,1}}" in back, back
    assert "(f64[2,2]{0,1}, s32[]) custom-call(" in back, back
    a = np.array([[4.0, 2.0], [-7.0, 5.0]])
    factor, info = evaluate(module, [a])
    np.testing.assert_allclose(factor, [[2.0, 1.0], [-7.0, 2.0]])


@pytest.mark.parametrize(
    "operand_layout, result_layout, which",
    [("[1, 0]", "[0, 1]", "operand 0"), ("[0, 1]", "[1, 0]", "result 0")],
)
def test_a_lapack_layout_hlort_does_not_honour_is_unimplemented(
    operand_layout, result_layout, which
):
    """A row-major matrix for XLA's column-major LAPACK kernel computes on the transpose bytes:
    hlort's logical reference would differ, so it refuses instead of a wrong result."""
    from hlort.errors import ErrorCode
    from hlort.importers.stablehlo import import_stablehlo

    with pytest.raises(HlortError) as info:
        import_stablehlo(_cholesky_mlir(operand_layout, result_layout))
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    message = info.value.message
    assert f"asks for layout {{1,0}} of {which} (f64[2,2])" in message, message
    assert "as if laid out {0,1}" in message and "lay " in message, message


def test_an_hlo_custom_call_with_a_non_default_layout_is_unimplemented_when_run():
    """Through HLO text too (XLA's spelling): a target that takes row-major arrays, asked for
    a column-major operand, is UNIMPLEMENTED at evaluation, not silently transposed."""
    from hlort.errors import ErrorCode
    from hlort.text.parser import parse_module

    text = """HloModule m
ENTRY main {
  x = f32[2,3]{1,0} parameter(0)
  ROOT y = f32[2,3]{1,0} custom-call(x), custom_call_target="Sharding",
    operand_layout_constraints={f32[2,3]{0,1}}
}
"""
    module = parse_module(text)
    with pytest.raises(HlortError) as info:
        evaluate(module, [np.zeros((2, 3), np.float32)])
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "asks for layout {0,1} of operand 0 (f32[2,3])" in info.value.message
    fine = text.replace(
        "operand_layout_constraints={f32[2,3]{0,1}}", "operand_layout_constraints={f32[2,3]{1,0}}"
    )
    np.testing.assert_array_equal(evaluate(parse_module(fine), [np.ones((2, 3), np.float32)]), 1)


def test_the_layout_check_knows_every_tpu_lapack_target():
    from hlort.interpreter.lapack_targets import TPU_QR
    from hlort.ir.custom_call_layouts import TPU_LAPACK_TARGETS

    assert set(TPU_LAPACK_TARGETS) == set(TPU_QR)


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_compile_refuses_a_custom_call_layout_for_every_backend(platform):
    """compile checks the layouts before any backend sees the call (the cpu plugin calls
    LAPACK on logical arrays too): a row-major matrix for getrf is UNIMPLEMENTED, JAX's
    column-major one compiles and runs."""
    import hlort
    from hlort.errors import ErrorCode

    if platform == "cpu":
        pytest.importorskip("hlort_cpu", reason="the cpu plugin is not installed")
    text = """HloModule lu
ENTRY main {
  a = f32[3,3]{1,0} parameter(0)
  ROOT lu = (f32[3,3]{0,1}, s32[3]{0}, s32[]) custom-call(a),
    custom_call_target="lapack_sgetrf_ffi", operand_layout_constraints={f32[3,3]LAYOUT},
    api_version=API_VERSION_TYPED_FFI
}
"""
    with pytest.raises(HlortError) as info:
        hlort.compile(text.replace("LAYOUT", "{1,0}"), platform)
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "asks for layout {1,0} of operand 0 (f32[3,3])" in info.value.message
    exe = hlort.compile(text.replace("LAYOUT", "{0,1}"), platform)
    a = np.array([[2.0, 1.0, 0.0], [4.0, 3.0, 1.0], [0.0, 1.0, 5.0]], np.float32)
    lu, pivots, status = (np.asarray(o) for o in exe(a))
    assert int(status) == 0 and list(pivots) == [2, 3, 3]  # LAPACK's 1-based interchanges
    lower, upper = np.tril(lu, -1) + np.eye(3), np.triu(lu)
    permuted = a[[1, 2, 0]]  # rows 1<->2, then 2<->3
    np.testing.assert_allclose(lower @ upper, permuted, rtol=1e-6, atol=1e-6)


def test_a_tiled_layout_constraint_is_unimplemented_not_ignored():
    """XLA's TPU layouts carry tiling (``{1,0:T(8,128)}``); hlort cannot honour it, so the call
    is refused with the fix, not taken as unconstrained."""
    from hlort.errors import ErrorCode
    from hlort.ir.custom_call_layouts import constraint_layouts

    assert constraint_layouts("{f32[2,3]{0,1}, s32[], (f32[2], s32[])}") == [(0, 1), None, None]
    with pytest.raises(HlortError) as info:
        constraint_layouts("{f32[8,128]{1,0:T(8,128)}}")
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "T(8,128)" in info.value.message and "dimension order" in info.value.message


def test_a_constraint_count_that_does_not_match_the_operands_is_invalid():
    from hlort.errors import ErrorCode
    from hlort.ir.custom_call_layouts import check_layouts
    from hlort.shape import array

    shapes = [array("f32", (2, 3)), array("f32", (3,))]
    with pytest.raises(HlortError) as info:
        check_layouts("y", "Sharding", [(1, 0)], shapes, array("f32", (2, 3)))
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "1 operand layout constraint(s) for 2 operand(s)" in info.value.message
    check_layouts("y", "Sharding", [], shapes, array("f32", (2, 3)))  # none given: unconstrained
