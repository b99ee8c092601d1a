"""The LAPACK routines added for eig, schur, hessenberg, tridiagonal and tridiagonal_solve
(geev, gees, gehrd, sytrd/hetrd, gtsv) on SciPy's LAPACK, in the call's own precision.

What XLA:CPU's kernels (jaxlib's ``lapack_kernels.cc``) do around each routine is kept, since
JAX's code reads the results: geev refuses a non-finite matrix with ``info = -4`` before calling
LAPACK and unpacks a real matrix's conjugate-pair vectors into complex columns (``v_j = re + i
im``, ``v_{j+1}`` its conjugate); gtsv is handed ``dl[1:]`` and ``du[:-1]``, the ends of JAX's
length-n diagonals staying as given. Outputs LAPACK does not write (vectors not asked for, or
vectors after a failure) are zeros, as the reference gives them
(:mod:`hlort.interpreter.lapack_nonsymmetric`, :mod:`hlort.interpreter.lapack_reductions`).
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.lapack_targets import LapackCall, gees_sort_unsupported

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _stack(fn, operands: list[np.ndarray], batch: tuple[int, ...]) -> list[np.ndarray]:
    """``fn(*matrices)`` per batch index (operands have ``batch`` leading), stacked back."""
    count = int(np.prod(batch))
    flat = [o.reshape((count, *o.shape[len(batch) :])) for o in operands]
    outs = [fn(*[f[i] for f in flat]) for i in range(count)]
    return [
        np.stack([o[k] for o in outs]).reshape((*batch, *np.shape(outs[0][k])))
        for k in range(len(outs[0]))
    ]


def unpack_pairs(wi: np.ndarray, packed: np.ndarray) -> np.ndarray:
    """JAX's ``UnpackEigenvectors``: real ``?geev`` columns to complex eigenvectors."""
    out = packed.astype(np.result_type(packed.dtype, np.complex64))
    j, n = 0, wi.shape[0]
    while j < n:
        if wi[j] != 0 and j + 1 < n:
            re, im = packed[:, j], packed[:, j + 1]
            out[:, j], out[:, j + 1] = re + 1j * im, re - 1j * im
            j += 2
        else:
            j += 1
    return out


def _geev(lapack, a: np.ndarray, left: bool, right: bool) -> list[np.ndarray]:
    fn = getattr(lapack, _PREFIX[a.dtype.name] + "geev")
    n = a.shape[-1]
    real = a.dtype.kind != "c"
    vector_type = np.result_type(a.dtype, np.complex64)

    def one(m):
        zeros = np.zeros((n, n), vector_type)
        if not np.isfinite(m).all():
            values = [np.zeros(n, a.dtype)] * (2 if real else 1)
            return (*values, zeros, zeros, np.int32(-4))
        if real:
            wr, wi, vl, vr, info = fn(m, compute_vl=int(left), compute_vr=int(right))
            ok = info == 0
            vl = unpack_pairs(wi, vl) if left and ok else zeros
            vr = unpack_pairs(wi, vr) if right and ok else zeros
            return wr, wi, vl, vr, np.int32(info)
        w, vl, vr, info = fn(m, compute_vl=int(left), compute_vr=int(right))
        ok = info == 0
        return w, vl if left and ok else zeros, vr if right and ok else zeros, np.int32(info)

    return _stack(one, [a], a.shape[:-2])


def _gees(lapack, a: np.ndarray, vectors: bool) -> list[np.ndarray]:
    fn = getattr(lapack, _PREFIX[a.dtype.name] + "gees")
    n = a.shape[-1]

    def one(m):
        *out, _work, info = fn(lambda *_: 0, m, compute_v=int(vectors), sort_t=0)
        t, sdim, *values, vs = out
        vs = vs if vectors else np.zeros((n, n), a.dtype)
        return (t, vs, *values, np.int32(sdim), np.int32(info))

    return _stack(one, [a], a.shape[:-2])


def _gtsv(lapack, dl, d, du, b) -> list[np.ndarray]:
    fn = getattr(lapack, _PREFIX[b.dtype.name] + "gtsv")

    def one(low, diag, up, rhs):
        off = len(diag) - 1  # SciPy wants a one-element off-diagonal when there is none
        pad = np.zeros(1, low.dtype)
        low2, diag2, up2, x, info = fn(low[1:] if off else pad, diag, up[:-1] if off else pad, rhs)
        low_out, up_out = low.copy(), up.copy()
        low_out[1:], up_out[:off] = low2[:off], up2[:off]
        return low_out, diag2, up_out, x, np.int32(info)

    return _stack(one, [dl, d, du, b], b.shape[:-2])


def native_checked(lapack, call: LapackCall, operands: list[np.ndarray]) -> list[np.ndarray]:
    """The results of a geev, gees, gehrd, sytrd/hetrd or gtsv call (non-empty operands)."""
    routine, a = call.routine, operands[0]
    prefix = _PREFIX[a.dtype.name]
    if routine == "geev":
        left = call.char("compute_left", "N") == "V"
        return _geev(lapack, a, left, call.char("compute_right", "V") == "V")
    if routine == "gees":
        gees_sort_unsupported(call)
        return _gees(lapack, a, call.char("mode", "V") == "V")
    if routine == "gehrd":
        fn = getattr(lapack, prefix + "gehrd")
        n = a.shape[-1]
        low, high = int(call.attributes.get("low", 1)), int(call.attributes.get("high", n))

        def hessenberg(m):
            h, tau, info = fn(m, lo=low - 1, hi=high - 1)
            return h, tau[: n - 1], np.int32(info)

        return _stack(hessenberg, [a], a.shape[:-2])
    if routine in ("sytrd", "hetrd"):
        fn = getattr(lapack, prefix + routine)
        lower = int(call.char("uplo", "L") == "L")
        return _stack(lambda m: fn(m, lower=lower), [a], a.shape[:-2])
    return _gtsv(lapack, *operands)
