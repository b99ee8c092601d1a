"""What LAPACK's Householder reductions and tridiagonal solve compute: gehrd, sytrd/hetrd, gtsv.

NumPy has none of them, so each is LAPACK's unblocked algorithm (``?gehd2``, ``?sytd2`` /
``?hetd2``, ``?gtsv``) on logical row-major matrices in f64 / c128, matrix by matrix over the
batch. The outputs keep LAPACK's packing because JAX's code reads it: ``orgqr`` of gehrd's
reflectors and ``tau`` is the Hessenberg form's Q; sytrd's reflectors sit below (``uplo`` L) or
above (U) the off-diagonal, the other triangle as given. Reflectors are ``?larfg``'s: ``H = I -
tau v v^H`` with ``v[0] = 1`` (sytrd U: the last element), ``beta`` real with the sign opposite
to ``Re(alpha)``, and ``tau = 0`` when there is nothing to annihilate. The blocked LAPACK
routines give the same factors up to rounding.
"""

from __future__ import annotations

import numpy as np


def larfg(alpha, x: np.ndarray):
    """``?larfg``: (beta, tau, v tail) with ``H^H (alpha; x) = (beta; 0)``."""
    norm = float(np.linalg.norm(x)) if x.size else 0.0
    if norm == 0 and np.imag(alpha) == 0:
        return alpha, alpha * 0, x.copy()
    beta = -np.copysign(np.hypot(abs(alpha), norm), np.real(alpha))
    tau = (beta - alpha) / beta
    return beta, tau, x / (alpha - beta)


def _flat(a: np.ndarray, tail: int) -> np.ndarray:
    return a.reshape((int(np.prod(a.shape[: a.ndim - tail])), *a.shape[a.ndim - tail :])).copy()


def gehrd(a: np.ndarray, low: int, high: int):
    """Hessenberg reduction of rows and columns ``low..high`` (1-based, as LAPACK's ilo/ihi):
    (H above the subdiagonal, reflectors below it; tau, zero outside ilo..ihi-1; info)."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    flat = _flat(a, 2)
    taus = np.zeros((flat.shape[0], max(n - 1, 0)), a.dtype)
    for h, tau in zip(flat, taus, strict=True):
        for i in range(low - 1, high - 1):
            beta, t, tail = larfg(h[i + 1, i], h[i + 2 : high, i])
            v = np.concatenate(([1], tail)).astype(a.dtype)
            right = h[:high, i + 1 : high]
            right -= t * np.outer(right @ v, v.conj())
            left = h[i + 1 : high, i + 1 :]
            left -= np.conj(t) * np.outer(v, v.conj() @ left)
            h[i + 1, i], h[i + 2 : high, i], tau[i] = beta, tail, t
    info = np.zeros(batch, np.int32)
    return flat.reshape(a.shape), taus.reshape((*batch, max(n - 1, 0))), info


def _hermitian(m: np.ndarray, lower: bool) -> np.ndarray:
    """The symmetric / Hermitian matrix one triangle of ``m`` stands for (real diagonal)."""
    tri = np.tril(m, -1) if lower else np.triu(m, 1)
    return tri + tri.conj().T + np.diag(np.real(np.diag(m)).astype(m.dtype))


def _reflect(block: np.ndarray, v: np.ndarray, tau) -> np.ndarray:
    """``H^H block H`` for ``H = I - tau v v^H``."""
    h = np.eye(len(v), dtype=block.dtype) - tau * np.outer(v, v.conj())
    return h.conj().T @ block @ h


def sytrd(a: np.ndarray, lower: bool):
    """Tridiagonal reduction ``Q^H A Q = T`` of the ``lower`` (or upper) triangle: (A with T's
    diagonal and off-diagonal and the reflectors in that triangle, the other as given; d; e;
    tau; info)."""
    n = a.shape[-1]
    batch = a.shape[:-2]
    flat = _flat(a, 2)
    m = max(n - 1, 0)
    ds = np.zeros((flat.shape[0], n), np.float64)
    es = np.zeros((flat.shape[0], m), np.float64)
    taus = np.zeros((flat.shape[0], m), a.dtype)
    for out, d, e, tau in zip(flat, ds, es, taus, strict=True):
        work = _hermitian(out, lower)
        steps = range(n - 1) if lower else range(n - 2, -1, -1)
        for i in steps:
            if lower:
                beta, t, tail = larfg(work[i + 1, i], work[i + 2 :, i])
                v = np.concatenate(([1], tail)).astype(a.dtype)
                work[i + 1 :, i + 1 :] = _reflect(work[i + 1 :, i + 1 :], v, t)
                out[i + 1, i], out[i + 2 :, i] = beta, tail
            else:
                beta, t, tail = larfg(work[i, i + 1], work[:i, i + 1])
                v = np.concatenate((tail, [1])).astype(a.dtype)
                work[: i + 1, : i + 1] = _reflect(work[: i + 1, : i + 1], v, t)
                out[i, i + 1], out[:i, i + 1] = beta, tail
            e[i], tau[i] = np.real(beta), t
        d[:] = np.real(np.diag(work))
        np.fill_diagonal(out, d)
    info = np.zeros(batch, np.int32)
    return (
        flat.reshape(a.shape),
        ds.reshape((*batch, n)),
        es.reshape((*batch, m)),
        taus.reshape((*batch, m)),
        info,
    )


def _size(z) -> float:
    return abs(np.real(z)) + abs(np.imag(z))  # LAPACK's cabs1 (abs for reals)


def _gtsv_one(dl: np.ndarray, d: np.ndarray, du: np.ndarray, b: np.ndarray) -> int:
    """``?gtsv`` in place on one system (``dl``, ``du``: the n-1 off-diagonals); its info."""
    n = d.shape[0]
    for k in range(n - 1):
        if dl[k] == 0:
            if d[k] == 0:
                return k + 1
        elif _size(d[k]) >= _size(dl[k]):
            mult = dl[k] / d[k]
            d[k + 1] -= mult * du[k]
            b[k + 1] -= mult * b[k]
            if k < n - 2:
                dl[k] = 0
        else:
            mult = d[k] / dl[k]
            d[k], temp = dl[k], d[k + 1]
            d[k + 1] = du[k] - mult * temp
            if k < n - 2:
                dl[k] = du[k + 1]
                du[k + 1] = -mult * dl[k]
            du[k] = temp
            top, below = b[k].copy(), b[k + 1].copy()
            b[k], b[k + 1] = below, top - mult * below
    if n == 0:
        return 0
    if d[n - 1] == 0:
        return n
    b[n - 1] /= d[n - 1]
    if n > 1:
        b[n - 2] = (b[n - 2] - du[n - 2] * b[n - 1]) / d[n - 2]
    for k in range(n - 3, -1, -1):
        b[k] = (b[k] - du[k] * b[k + 1] - dl[k] * b[k + 2]) / d[k]
    return 0


def gtsv(dl: np.ndarray, d: np.ndarray, du: np.ndarray, b: np.ndarray):
    """JAX's tridiagonal solve: ``dl[..., i]`` is A[i, i-1] (``dl[..., 0]`` unused), ``du[...,
    i]`` is A[i, i+1] (the last unused), as JAX's kernel hands ``dl + 1`` and ``du`` to LAPACK.
    (dl, d, du as LAPACK leaves them: U's second superdiagonal, diagonal and first
    superdiagonal, the unused ends as given; the solution; info, the first zero pivot, the
    system left as far as LAPACK got)."""
    batch, n = d.shape[:-1], d.shape[-1]
    lows, diags, ups = _flat(dl, 1), _flat(d, 1), _flat(du, 1)
    rhs = _flat(b, 2)
    info = np.zeros(lows.shape[0], np.int32)
    with np.errstate(all="ignore"):
        for s in range(lows.shape[0]):
            info[s] = _gtsv_one(lows[s, 1:], diags[s], ups[s, : max(n - 1, 0)], rhs[s])
    return (
        lows.reshape(dl.shape),
        diags.reshape(d.shape),
        ups.reshape(du.shape),
        rhs.reshape(b.shape),
        info.reshape(batch),
    )
