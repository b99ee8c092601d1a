"""cpu runs JAX's LAPACK custom calls on LAPACK (SciPy), or on hlort's reference without SciPy.

With SciPy the thunk calls the routine of the call's own precision, so it agrees with the
interpreter (f64 / c128, rounded once) within ``64 eps`` of each output's largest magnitude
(LAPACK in f32 rounds every step in f32; the matrices are well conditioned); integer outputs
(pivots, info) agree exactly. Eigen- and singular vectors are compared through sign-free views,
a Schur form through its diagonal and eigenvalues.
Without SciPy the thunk runs the reference itself: bit for bit the interpreter's.
"""

from __future__ import annotations

import numpy as np
import pytest

import hlort
import hlort_cpu.lapack as cpu_lapack
from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.shape import TupleShape

PREFIX = {np.float32: "s", np.float64: "d", np.complex64: "c", np.complex128: "z"}


def _dt(t):
    return dtypes.from_numpy(np.dtype(t))


def _real(t):
    return np.float32 if t in (np.float32, np.complex64) else np.float64


def _matrix(rng, dims, t):
    a = rng.standard_normal(dims)
    if np.dtype(t).kind == "c":
        a = a + 1j * rng.standard_normal(dims)
    return a.astype(t)


def _cases(t):
    """(routine, operands, result shapes, attributes) for element type ``t``."""
    rng = np.random.default_rng(7)
    g = _matrix(rng, (2, 4, 4), t)
    spd = (g @ np.conj(np.swapaxes(g, -1, -2)) + 4 * np.eye(4)).astype(t)
    general = _matrix(rng, (2, 5, 3), t)
    m = lambda *d: shape.array(_dt(t), d)  # noqa: E731
    r = lambda *d: shape.array(_dt(_real(t)), d)  # noqa: E731
    i = lambda *d: shape.array(dtypes.S32, d)  # noqa: E731
    wide = np.complex128 if np.dtype(t).kind == "c" else np.float64
    packed = np.linalg.qr(general.astype(wide), mode="raw")
    reflectors = np.swapaxes(packed[0], -1, -2).astype(t)
    tau = packed[1].astype(t)
    complex_ = np.dtype(t).kind == "c"
    return [
        ("potrf", [spd], [m(2, 4, 4), i(2)], {"uplo": "L"}),
        ("potrf", [spd], [m(2, 4, 4), i(2)], {"uplo": "U"}),
        ("getrf", [general], [m(2, 5, 3), i(2, 3), i(2)], {}),
        ("geqrf", [general], [m(2, 5, 3), m(2, 3)], {}),
        ("ungqr" if complex_ else "orgqr", [reflectors, tau], [m(2, 5, 3)], {}),
        (
            "heevd" if complex_ else "syevd",
            [spd],
            [m(2, 4, 4), r(2, 4), i(2)],
            {"mode": "V", "uplo": "L"},
        ),
        ("gesdd", [general], [m(2, 5, 3), r(2, 3), m(2, 5, 5), m(2, 3, 3), i(2)], {"mode": "A"}),
        ("gesvd", [general], [m(2, 5, 3), r(2, 3), m(2, 5, 3), m(2, 3, 3), i(2)], {"mode": "S"}),
        (
            "trsm",
            [spd, _matrix(rng, (2, 4, 2), t)],
            [m(2, 4, 2)],
            {"side": "L", "uplo": "L", "trans_x": "C", "diag": "N"},
        ),
        *_nonsymmetric_cases(t, rng, g, spd),
    ]


def _nonsymmetric_cases(t, rng, g, spd):
    """geev, gees, gehrd, sytrd/hetrd and gtsv on the same kind of operands."""
    m = lambda *d: shape.array(_dt(t), d)  # noqa: E731
    r = lambda *d: shape.array(_dt(_real(t)), d)  # noqa: E731
    c = lambda *d: shape.array(_dt(np.result_type(t, np.complex64)), d)  # noqa: E731
    i = lambda *d: shape.array(dtypes.S32, d)  # noqa: E731
    complex_ = np.dtype(t).kind == "c"
    values = [m(2, 4)] * (1 if complex_ else 2)
    dl, du = _matrix(rng, (2, 6), t), _matrix(rng, (2, 6), t)
    d = (_matrix(rng, (2, 6), t) + 4).astype(t)
    vectors = {"compute_left": "V", "compute_right": "V"}
    return [
        ("geev", [g], [*values, c(2, 4, 4), c(2, 4, 4), i(2)], vectors),
        ("gees", [g], [m(2, 4, 4), m(2, 4, 4), *values, i(2), i(2)], {"mode": "V", "sort": "N"}),
        ("gehrd", [g], [m(2, 4, 4), m(2, 3), i(2)], {}),
        (
            "hetrd" if complex_ else "sytrd",
            [spd],
            [m(2, 4, 4), r(2, 4), r(2, 3), m(2, 3), i(2)],
            {"uplo": "U"},
        ),
        ("gtsv", [dl, d, du, _matrix(rng, (2, 6, 3), t)], [m(2, 6)] * 3 + [m(2, 6, 3), i(2)], {}),
    ]


def _module(t, routine, operands, results, attributes):
    b = Builder(routine)
    params = [b.parameter(shape.array(_dt(o.dtype), o.shape)) for o in operands]
    out = TupleShape(tuple(results)) if len(results) > 1 else results[0]
    config = "{" + ", ".join(f"{k} = {ord(v)} : ui8" for k, v in attributes.items()) + "}"
    return b.build(
        b.custom_call(f"lapack_{PREFIX[t]}{routine}_ffi", params, out, backend_config=config)
    )


def _flat(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _sign_free(routine, values):
    """The outputs to compare: vectors only through |v| (their sign / phase is free)."""
    if routine in ("syevd", "heevd"):
        return [np.abs(values[0]), values[1], values[2]]
    if routine in ("gesdd", "gesvd"):
        return [values[1], np.abs(values[2]), np.abs(values[3]), values[4]]
    if routine == "geev":  # LAPACK's normalisation leaves each vector's sign free
        return [*values[:-3], np.abs(values[-3]), np.abs(values[-2]), values[-1]]
    if routine == "gees":  # the Schur form is unique up to a unitary diagonal: its diagonal is
        return [np.diagonal(values[0], axis1=-2, axis2=-1), *values[2:]]
    return values


def _run(module, args):
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    return exe, _flat(exe(*args))


@pytest.mark.parametrize("t", list(PREFIX), ids=lambda t: np.dtype(t).name)
def test_native_lapack_agrees_with_the_reference(t):
    pytest.importorskip("scipy", reason="the native path calls LAPACK through SciPy")
    for routine, operands, results, attributes in _cases(t):
        module = _module(t, routine, operands, results, attributes)
        exe, got = _run(module, operands)
        assert exe.raw.stats()["compiled"].get("custom-call (LAPACK)") == 1, routine
        want = _flat(hlort.evaluate(module, operands))
        for k, (g, w) in enumerate(
            zip(_sign_free(routine, got), _sign_free(routine, want), strict=True)
        ):
            g, w = np.asarray(g), np.asarray(w)
            assert g.dtype == w.dtype and g.shape == w.shape, (routine, k)
            if w.dtype.kind in "iu":
                np.testing.assert_array_equal(g, w, err_msg=f"{routine} out{k}")
                continue
            scale = float(np.max(np.abs(w))) or 1.0
            tolerance = 64 * float(np.finfo(w.dtype).eps) * scale
            assert float(np.max(np.abs(g - w))) <= tolerance, (routine, k)


def test_without_scipy_the_reference_runs(monkeypatch):
    monkeypatch.setattr(cpu_lapack, "_scipy", lambda: None)
    for t in (np.float32, np.complex128):
        for routine, operands, results, attributes in _cases(t):
            module = _module(t, routine, operands, results, attributes)
            exe, got = _run(module, operands)
            assert exe.raw.stats()["compiled"].get("custom-call (LAPACK via NumPy)") == 1
            for g, w in zip(got, _flat(hlort.evaluate(module, operands)), strict=True):
                np.testing.assert_array_equal(g, w, err_msg=routine)
