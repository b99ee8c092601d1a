"""geev, gees, gehrd, sytrd/hetrd and gtsv (JAX's eig, schur, hessenberg, tridiagonal and
tridiagonal_solve on CPU) on the interpreter, cpu and tpusim, in f32, f64, c64 and c128.

Where the answer is unique only up to choices LAPACK makes (eigenvector sign or phase, the
Schur form's unitary diagonal and a real 2x2 block's rotation) the tests check what defines
it: ``A v = w v`` and ``u^H A = w u^H`` with LAPACK's normalisation, ``Q T Q^H = A`` with Q
unitary and T (quasi-)triangular in standard form, eigenvalues NumPy's. The reductions and
the tridiagonal solve are deterministic and are compared with SciPy's LAPACK itself. On cpu
each call runs natively (no interpreter fallback), on tpusim as one counted HOSTOP. JAX's
own CPU results for these routines are the real-program corpus's
(``tests/real_programs/programs/linalg_{eig,schur,hessenberg,tridiagonal}*``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import hlort
from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.errors import HlortError, Unimplemented
from hlort.shape import TupleShape

PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}
TYPES = list(PREFIX)
PLATFORMS = ("interpreter", "cpu", "tpusim")
HERE = os.path.dirname(os.path.abspath(__file__))


def _dt(t) -> dtypes.DType:
    return dtypes.from_numpy(np.dtype(t))


def _real(t):
    return np.float32 if t in (np.float32, np.complex64) else np.float64


def _complex(t):
    return np.complex64 if t in (np.float32, np.complex64) else np.complex128


def _tol(t, scale=1.0) -> float:
    return 200 * float(np.finfo(_real(t)).eps) * scale


def _matrix(rng, dims, t):
    a = rng.standard_normal(dims)
    if np.dtype(t).kind == "c":
        a = a + 1j * rng.standard_normal(dims)
    return a.astype(t)


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _assert_same_spectrum(got, want, tolerance):
    """Each batch's eigenvalues are the other's, in whatever order (ties in the real part make
    sorting fragile)."""
    distance = np.abs(got[..., :, None] - want[..., None, :])
    assert distance.min(-1).max() <= tolerance and distance.min(-2).max() <= tolerance, (got, want)


def _run(platform, routine, t, operands, results, **attributes):
    b = Builder(routine)
    params = [b.parameter(shape.array(_dt(o.dtype), o.shape)) for o in operands]
    out = TupleShape(tuple(results)) if len(results) > 1 else results[0]
    config = "{" + ", ".join(f"{k} = {v}" for k, v in attributes.items()) + "}"
    target = f"lapack_{PREFIX[t]}{routine}_ffi"
    module = b.build(b.custom_call(target, params, out, backend_config=config))
    exe = hlort.compile(module, platform)
    if platform == "cpu":
        assert exe.raw.stats()["fallback_count"] == 0
    value = exe(*operands)
    if platform == "tpusim":  # a host-assisted op, counted as one
        assert exe.raw.last_profile.by_class["HOSTOP"]["count"] == 1
    return [np.asarray(v) for v in (value if isinstance(value, (list, tuple)) else [value])]


def _char(c: str) -> str:
    return f"{ord(c)} : ui8"


def _a(t, *dims):
    return shape.array(_dt(t), dims)


def _info(*batch):
    return shape.array(dtypes.S32, batch)


def _geev_results(t, batch, n):
    values = [_a(t, *batch, n)] * (1 if np.dtype(t).kind == "c" else 2)
    return [*values, _a(_complex(t), *batch, n, n), _a(_complex(t), *batch, n, n), _info(*batch)]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
def test_geev_gives_normalised_left_and_right_eigenvectors(platform, t):
    a = _matrix(np.random.default_rng(1), (2, 4, 4), t)
    outs = _run(
        platform,
        "geev",
        t,
        [a],
        _geev_results(t, (2,), 4),
        compute_left=_char("V"),
        compute_right=_char("V"),
    )
    *values, vl, vr, info = outs
    w = values[0] if len(values) == 1 else values[0] + 1j * values[1]
    assert info.tolist() == [0, 0] and vr.dtype == _complex(t)
    wide = a.astype(np.complex128)
    scale = float(np.abs(a).max())
    np.testing.assert_allclose(wide @ vr, vr * w[..., None, :], atol=_tol(t, scale))
    np.testing.assert_allclose(_h(vl) @ wide, w[..., :, None] * _h(vl), atol=_tol(t, scale))
    for v in (vl, vr):
        np.testing.assert_allclose(np.linalg.norm(v, axis=-2), 1, atol=_tol(t))
        top = np.take_along_axis(v, np.argmax(np.abs(v), -2)[..., None, :], -2)
        np.testing.assert_allclose(top.imag, 0, atol=_tol(t))
    want = np.linalg.eigvals(wide)
    _assert_same_spectrum(w, want, _tol(t, scale))
    if np.dtype(t).kind != "c":  # conjugate pairs, the positive imaginary part first
        for wk, vk in zip(w, vr, strict=True):
            for j in np.flatnonzero(wk.imag > 0):
                assert wk[j + 1] == np.conj(wk[j])
                np.testing.assert_array_equal(vk[:, j + 1], np.conj(vk[:, j]))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_geev_values_only_and_a_non_finite_matrix(platform):
    a = _matrix(np.random.default_rng(2), (3, 3, 3), np.float64)
    a[1, 0, 0] = np.nan
    wr, wi, vl, vr, info = _run(
        platform,
        "geev",
        np.float64,
        [a],
        _geev_results(np.float64, (3,), 3),
        compute_left=_char("N"),
        compute_right=_char("N"),
    )
    assert info.tolist() == [0, -4, 0]  # JAX's kernel refuses a non-finite matrix
    _assert_same_spectrum(wr[0] + 1j * wi[0], np.linalg.eigvals(a[0]), 1e-12)
    assert not vl.any() and not vr.any()


def _gees_results(t, batch, n):
    values = [_a(t, *batch, n)] * (1 if np.dtype(t).kind == "c" else 2)
    return [_a(t, *batch, n, n), _a(t, *batch, n, n), *values, _info(*batch), _info(*batch)]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
def test_gees_gives_a_schur_form_in_standard_form(platform, t):
    a = _matrix(np.random.default_rng(3), (2, 5, 5), t)
    tform, q, *values, sdim, info = _run(
        platform, "gees", t, [a], _gees_results(t, (2,), 5), mode=_char("V"), sort=_char("N")
    )
    assert info.tolist() == [0, 0] and sdim.tolist() == [0, 0]
    scale = float(np.abs(a).max())
    np.testing.assert_allclose(q @ tform @ _h(q), a, atol=_tol(t, scale))
    np.testing.assert_allclose(_h(q) @ q, np.broadcast_to(np.eye(5), a.shape), atol=_tol(t))
    if np.dtype(t).kind == "c":
        assert not np.tril(tform, -1).any()
        np.testing.assert_array_equal(values[0], np.diagonal(tform, axis1=-2, axis2=-1))
        w = values[0]
    else:
        assert not np.tril(tform, -2).any()
        for m, wi in zip(tform, values[1], strict=True):
            for k in np.flatnonzero(np.diag(m, -1)):  # a 2x2 block per conjugate pair
                assert m[k, k] == pytest.approx(m[k + 1, k + 1], abs=_tol(t, scale))
                assert m[k, k + 1] * m[k + 1, k] < 0 and wi[k] > 0 and wi[k + 1] == -wi[k]
        np.testing.assert_allclose(values[0], np.diagonal(tform, axis1=-2, axis2=-1))
        w = values[0] + 1j * values[1]
    want = np.linalg.eigvals(a.astype(np.complex128))
    _assert_same_spectrum(w, want, _tol(t, scale))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gees_without_vectors_and_sorting_unimplemented(platform):
    a = _matrix(np.random.default_rng(4), (4, 4), np.complex128)
    tform, q, w, sdim, info = _run(
        platform,
        "gees",
        np.complex128,
        [a],
        _gees_results(np.complex128, (), 4),
        mode=_char("N"),
        sort=_char("N"),
    )
    assert info == 0 and not q.any() and not np.tril(tform, -1).any()
    with pytest.raises(Unimplemented, match="select function"):
        _run(
            platform,
            "gees",
            np.complex128,
            [a],
            _gees_results(np.complex128, (), 4),
            mode=_char("V"),
            sort=_char("S"),
        )


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", [np.float64, np.complex128], ids=["float64", "complex128"])
def test_a_defective_matrix_still_gets_vectors_and_a_schur_form(platform, t):
    """A Jordan block (eigenvectors too ill-conditioned for the fast constructions): left
    vectors are still null vectors of A - w, the Schur form still exact to rounding."""
    rng = np.random.default_rng(8)
    jordan = np.diag([2.0, 2.0, 5.0, -1.0]) + np.diag([1.0, 0.0, 0.0], 1)
    s = rng.standard_normal((4, 4)) + np.eye(4) * 3
    a = (s @ jordan @ np.linalg.inv(s)).astype(t)
    scale = float(np.abs(a).max())
    *values, vl, vr, info = _run(
        platform,
        "geev",
        t,
        [a],
        _geev_results(t, (), 4),
        compute_left=_char("V"),
        compute_right=_char("V"),
    )
    assert info == 0
    w = values[0] if len(values) == 1 else values[0] + 1j * values[1]
    _assert_same_spectrum(w, np.array([2, 2, 5, -1]), 1e-6 * scale)  # a double root: sqrt(eps)
    for v in (vl, vr):
        np.testing.assert_allclose(np.linalg.norm(v, axis=0), 1, atol=1e-12)
    np.testing.assert_allclose(_h(vl) @ a, w[:, None] * _h(vl), atol=1e-12 * scale)
    np.testing.assert_allclose(a @ vr, vr * w[None, :], atol=1e-12 * scale)
    tform, q, *_, info = _run(
        platform, "gees", t, [a], _gees_results(t, (), 4), mode=_char("V"), sort=_char("N")
    )
    assert info == 0 and not np.tril(tform, -1).any()  # real eigenvalues: triangular
    np.testing.assert_allclose(q @ tform @ _h(q), a, atol=1e-12 * scale)
    np.testing.assert_allclose(_h(q) @ q, np.eye(4), atol=1e-12)
    _assert_same_spectrum(np.diag(tform), w, 1e-6 * scale)


@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
def test_the_reference_schur_fallback_is_exact(t):
    """The deflating construction the reference falls back on when the eigenvectors are too
    ill-conditioned for their QR (rarely reached from a call: tested directly)."""
    from hlort.interpreter.lapack_nonsymmetric import schur_by_deflation

    a = _matrix(np.random.default_rng(9), (6, 6), t).astype(np.result_type(t, np.float64))
    order = np.linalg.eigvals(a).astype(np.complex128)
    tform, q = schur_by_deflation(a, order)
    np.testing.assert_allclose(q @ tform @ _h(q), a, atol=1e-12 * float(np.abs(a).max()))
    np.testing.assert_allclose(_h(q) @ q, np.eye(6), atol=1e-12)
    below = -2 if np.dtype(t).kind != "c" else -1
    assert not np.tril(tform, below).any()
    diagonal = np.diag(tform)
    if np.dtype(t).kind == "c":
        np.testing.assert_allclose(diagonal, order, atol=1e-10)  # in the order asked for


def _scipy_lapack(t, name):
    lapack = pytest.importorskip("scipy.linalg.lapack")
    return getattr(lapack, PREFIX[t] + name)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("low, high", [(1, 5), (2, 4)])
def test_gehrd_is_lapacks_hessenberg_reduction(platform, t, low, high):
    a = _matrix(np.random.default_rng(5), (2, 5, 5), t)
    results = [_a(t, 2, 5, 5), _a(t, 2, 4), _info(2)]
    bounds = {"low": f"{low} : i32", "high": f"{high} : i32"}
    h, tau, info = _run(platform, "gehrd", t, [a], results, **bounds)
    assert info.tolist() == [0, 0]
    assert not tau[:, : low - 1].any() and not tau[:, high - 1 :].any()
    fn = _scipy_lapack(t, "gehrd")
    for k in range(2):
        want_h, want_tau, _ = fn(a[k], lo=low - 1, hi=high - 1)  # SciPy's are 0-based
        scale = float(np.abs(a[k]).max())
        np.testing.assert_allclose(h[k], want_h, atol=_tol(t, scale))
        np.testing.assert_allclose(tau[k], want_tau[:4], atol=_tol(t))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_sytrd_is_lapacks_tridiagonal_reduction(platform, t, uplo):
    g = _matrix(np.random.default_rng(6), (2, 5, 5), t)
    a = (g + _h(g)).astype(t)
    complex_ = np.dtype(t).kind == "c"
    routine = "hetrd" if complex_ else "sytrd"
    results = [_a(t, 2, 5, 5), _a(_real(t), 2, 5), _a(_real(t), 2, 4), _a(t, 2, 4), _info(2)]
    out, d, e, tau, info = _run(platform, routine, t, [a], results, uplo=_char(uplo))
    assert info.tolist() == [0, 0] and d.dtype == _real(t) and e.dtype == _real(t)
    fn = _scipy_lapack(t, routine)
    for k in range(2):
        want = fn(a[k], lower=int(uplo == "L"))
        scale = float(np.abs(a[k]).max())
        for got, expected in zip((out[k], d[k], e[k], tau[k]), want[:4], strict=True):
            np.testing.assert_allclose(got, expected, atol=_tol(t, scale))


def _dense(dl, d, du):
    return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
def test_gtsv_solves_and_leaves_lapacks_factors(platform, t):
    rng = np.random.default_rng(7)
    dl, d, du = (_matrix(rng, (2, 6), t) for _ in range(3))
    d[1, 2] = 0  # a pivot LAPACK must interchange around
    b = _matrix(rng, (2, 6, 3), t)
    results = [_a(t, 2, 6)] * 3 + [_a(t, 2, 6, 3), _info(2)]
    got = _run(platform, "gtsv", t, [dl, d, du, b], results)
    assert got[4].tolist() == [0, 0]
    fn = _scipy_lapack(t, "gtsv")
    for k in range(2):
        x = np.linalg.solve(_dense(dl[k], d[k], du[k]).astype(np.complex128), b[k])
        np.testing.assert_allclose(got[3][k], x, atol=_tol(t, 10 * float(np.abs(x).max())))
        low, diag, up, _, _ = fn(dl[k, 1:], d[k], du[k, :-1], b[k])
        assert got[0][k, 0] == dl[k, 0] and got[2][k, -1] == du[k, -1]  # the unused ends
        for g, w in ((got[0][k, 1:], low), (got[1][k], diag), (got[2][k, :-1], up)):
            np.testing.assert_allclose(g, w, atol=_tol(t, float(np.abs(w).max())))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gtsv_reports_a_singular_system(platform):
    t = np.float64
    dl, d, du = np.zeros((1, 3)), np.array([[1.0, 0.0, 2.0]]), np.zeros((1, 3))
    got = _run(
        platform,
        "gtsv",
        t,
        [dl, d, du, np.ones((1, 3, 1))],
        [_a(t, 1, 3)] * 3 + [_a(t, 1, 3, 1), _info(1)],
    )
    assert got[4].tolist() == [2]  # LAPACK's first zero pivot, 1-based


def _empty_cases(t, batch, n):
    a = np.zeros((*batch, n, n), t)
    vec = np.zeros((*batch, n), t)
    m = max(n - 1, 0)
    v = "V"
    return [
        (
            "geev",
            [a],
            _geev_results(t, batch, n),
            dict(compute_left=_char(v), compute_right=_char(v)),
        ),
        ("gees", [a], _gees_results(t, batch, n), dict(mode=_char(v), sort=_char("N"))),
        (
            "gehrd",
            [a],
            [_a(t, *batch, n, n), _a(t, *batch, m), _info(*batch)],
            dict(low="1 : i32", high=f"{n} : i32"),
        ),
        (
            "hetrd" if np.dtype(t).kind == "c" else "sytrd",
            [a],
            [
                _a(t, *batch, n, n),
                _a(_real(t), *batch, n),
                _a(_real(t), *batch, m),
                _a(t, *batch, m),
                _info(*batch),
            ],
            dict(uplo=_char("L")),
        ),
        (
            "gtsv",
            [vec, vec, vec, np.zeros((*batch, n, 2), t)],
            [_a(t, *batch, n)] * 3 + [_a(t, *batch, n, 2), _info(*batch)],
            {},
        ),
    ]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("t", TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("batch, n", [((), 0), ((0,), 3), ((2,), 0)])
def test_empty_matrices_and_batches(platform, t, batch, n):
    for routine, operands, results, attributes in _empty_cases(t, batch, n):
        outs = _run(platform, routine, t, operands, results, **attributes)
        assert [o.shape for o in outs] == [r.dims for r in results], routine
        assert [o.dtype for o in outs] == [r.dtype.numpy for r in results], routine


def test_a_declared_result_of_the_wrong_shape_is_refused():
    a = np.zeros((3, 3), np.float32)
    wrong = [_a(np.float32, 3)] * 2 + [_a(np.float32, 3, 3)] * 2 + [_info()]  # real vectors
    with pytest.raises(HlortError, match="returns"):
        _run("interpreter", "geev", np.float32, [a], wrong, compute_right=_char("V"))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_unknown_lapack_routine_is_named_with_the_fix(platform):
    """JAX's pivoting QR (``lapack_sgeqp3_ffi``), which hlort does not ship: UNIMPLEMENTED naming
    the routine and the fix, not a layout or registration message."""
    text = open(os.path.join(HERE, "programs", "qr_pivoting_geqp3.mlir")).read()
    with pytest.raises(Unimplemented) as info:
        hlort.compile(text, platform)
    message = str(info.value)
    assert "'lapack_sgeqp3_ffi' is the LAPACK routine 'geqp3' (f32)" in message, message
    assert "does not support" in message and "gtsv" in message and "Fix:" in message
    assert "layout" not in message
    a = np.zeros((3, 3))  # and built without layouts (the route an HLO text takes)
    with pytest.raises(Unimplemented, match=r"'lapack_dgeqp3_ffi' is the LAPACK routine 'geqp3'"):
        _run(platform, "geqp3", np.float64, [a], [_a(np.float64, 3, 3), _a(np.float64, 3)])
