"""What LAPACK's nonsymmetric eigen routines compute for JAX: geev and gees, in f64 / c128.

``geev`` (``jnp.linalg.eig``): eigenvalues in LAPACK's order (NumPy's ``eig`` is LAPACK's
``?geev``), right vectors ``A v = w v`` and left vectors ``u^H A = w u^H``, each of unit 2-norm
with its largest-magnitude component real, as ``?geev`` normalises them. For a real matrix
LAPACK packs a conjugate pair's vectors into two real columns; JAX's kernel unpacks them
(``v_j = re + i im``, ``v_{j+1}`` its conjugate) and so do these results, which are complex.
JAX's kernel gives ``info = -4`` without calling LAPACK when the input is not finite, and
leaves vectors it was not asked for (or, on failure, any) unset: hlort gives zeros, and NaN
values on failure (JAX replaces every output by NaN where ``info != 0``).

``gees`` (``jax.scipy.linalg.schur``): ``A = Q T Q^H`` with T upper triangular (complex) or
quasi-triangular in LAPACK's standard form (real: 1x1 blocks and 2x2 blocks with equal
diagonal and off-diagonals of opposite sign, one per conjugate pair, positive imaginary part
first). The Schur form is unique only up to the order of the eigenvalues and a unitary
diagonal (and, real, a 2x2 block's rotation); hlort orders T's diagonal as f64 LAPACK's geev
finds the eigenvalues (NumPy's ``eig``), which is gees's order as a rule (geev balances the
matrix first, gees does not, and an f32 LAPACK may order close eigenvalues differently). Q is
the QR of the eigenvectors in that order where they are well conditioned (O(n^3)), else hlort
deflates one eigenvalue (or real pair) at a time (O(n^4), any matrix); left eigenvectors are
likewise ``V^-1``'s rows, else null vectors of ``A - w_j`` from an SVD each. Only ``sort = N``
exists (JAX passes no ``select`` function and its kernel rejects S); ``sdim`` is then 0.
Vectors not asked for (``mode = N``) are zeros.
"""

from __future__ import annotations

import numpy as np


def _normalised(v: np.ndarray) -> np.ndarray:
    """Columns of unit norm, each one's largest-magnitude component real and positive."""
    v = v / np.linalg.norm(v, axis=0, keepdims=True)
    k = np.argmax(np.abs(v), axis=0)
    top = v[k, np.arange(v.shape[1])]
    return v * (np.conj(top) / np.abs(top))[None, :]


# below this residual (relative to max |A|, in f64) a fast construction is taken as exact
_RESIDUAL = 1e-12


def _pairs_conjugate(u: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A real matrix's vectors as LAPACK gives them: real for a real eigenvalue, the second of
    a conjugate pair the first's conjugate."""
    u[:, w.imag == 0] = u[:, w.imag == 0].real
    j, n = 0, len(w)
    while j < n - 1:
        if w[j].imag != 0:
            u[:, j + 1] = np.conj(u[:, j])
            j += 1
        j += 1
    return u


def _left_vectors(a: np.ndarray, w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``u_j`` with ``u_j^H (A - w_j) = 0``: the rows of ``V^-1`` (right vectors ``v``) where
    that is accurate, else the smallest left singular vector of each ``A - w_j`` (a vector
    even where A is defective)."""
    scale = float(np.abs(a).max()) or 1.0
    u = None
    with np.errstate(all="ignore"):
        try:
            u = _normalised(np.linalg.inv(v).conj().T)
            residual = np.abs(u.conj().T @ a - w[:, None] * u.conj().T).max()
            if not residual <= _RESIDUAL * scale:
                u = None
        except np.linalg.LinAlgError:
            u = None
    if u is None:
        n = a.shape[-1]
        shifted = a[None, :, :] - w[:, None, None] * np.eye(n)[None]
        u = _normalised(np.linalg.svd(shifted)[0][:, :, -1].T.astype(np.complex128))
    return u if a.dtype.kind == "c" else _pairs_conjugate(u, w)


def _geev_one(a: np.ndarray, left: bool, right: bool):
    n = a.shape[-1]
    nan = np.full(n, np.nan + 0j)
    if n == 0:
        return nan, np.zeros((0, 0), complex), np.zeros((0, 0), complex), 0
    if not np.isfinite(a).all():
        return nan, np.zeros((n, n), complex), np.zeros((n, n), complex), -4
    try:
        w, v = np.linalg.eig(a)
    except np.linalg.LinAlgError:
        return nan, np.zeros((n, n), complex), np.zeros((n, n), complex), 1
    w = w.astype(np.complex128)
    vr = v.astype(np.complex128) if right else np.zeros((n, n), complex)
    vl = _left_vectors(a, w, v.astype(np.complex128)) if left else np.zeros((n, n), complex)
    return w, vl, vr, 0


def geev(a: np.ndarray, left: bool, right: bool):
    """(eigenvalues (complex), left vectors, right vectors, info) over the batch."""
    batch, n = a.shape[:-2], a.shape[-1]
    flat = a.reshape((int(np.prod(batch)), n, n))
    outs = [_geev_one(m, left, right) for m in flat]
    w = np.array([o[0] for o in outs]).reshape((*batch, n))
    vl = np.array([o[1] for o in outs]).reshape((*batch, n, n))
    vr = np.array([o[2] for o in outs]).reshape((*batch, n, n))
    info = np.array([o[3] for o in outs], np.int32).reshape(batch)
    return w, vl, vr, info


def _basis(columns: np.ndarray) -> np.ndarray:
    """A unitary matrix whose first columns span ``columns`` (an m x k block, full rank)."""
    m, k = columns.shape
    q = np.linalg.qr(np.concatenate([columns, np.eye(m, m - k, dtype=columns.dtype)], 1))[0]
    return q


def _apply(t: np.ndarray, q: np.ndarray, p: np.ndarray, k: int) -> None:
    """``T := P^H T P`` and ``Q := Q P`` for ``P`` acting on indices ``k..``."""
    t[k:, :] = p.conj().T @ t[k:, :]
    t[:, k:] = t[:, k:] @ p
    q[:, k:] = q[:, k:] @ p


def _standardise(t: np.ndarray, q: np.ndarray, k: int) -> None:
    """Rotate the 2x2 block at ``k`` to equal diagonal entries (LAPACK's ``?lanv2`` form)."""
    (a, b), (c, d) = t[k : k + 2, k : k + 2]
    theta = 0.5 * np.arctan2(d - a, b + c)
    cs, sn = np.cos(theta), np.sin(theta)
    g = np.array([[cs, -sn], [sn, cs]])
    rotation = np.eye(t.shape[0] - k)
    rotation[:2, :2] = g
    _apply(t, q, rotation, k)


def _schur_from_vectors(a: np.ndarray, w: np.ndarray, v: np.ndarray):
    """(T, Q) from the QR of the eigenvectors in eigenvalue order (a real pair as its real and
    imaginary parts), whose leading columns span invariant subspaces; None where the
    eigenvectors are too ill-conditioned for T's zeros to be zeros."""
    n, real = a.shape[-1], a.dtype.kind != "c"
    columns, blocks, j = [], [], 0
    while j < n:
        if real and w[j].imag != 0 and j + 1 < n:
            columns += [v[:, j].real, v[:, j].imag]
            blocks.append(j)
            j += 2
        else:
            columns.append(v[:, j].real if real else v[:, j])
            j += 1
    q = np.linalg.qr(np.stack(columns, 1).astype(a.dtype))[0]
    t = q.conj().T @ a @ q
    for k in blocks:
        _standardise(t, q, k)
    keep = np.triu(np.ones((n, n), bool))
    for k in blocks:
        keep[k + 1, k] = True
    if not np.abs(t[~keep]).max(initial=0.0) <= _RESIDUAL * (float(np.abs(a).max()) or 1.0):
        return None
    t[~keep] = 0
    return t, q


def _schur_one(a: np.ndarray):
    if a.shape[-1] == 0:
        return a.copy(), a.copy()
    order, vectors = np.linalg.eig(a)
    order = order.astype(np.complex128)
    with np.errstate(all="ignore"):
        fast = _schur_from_vectors(a, order, vectors.astype(np.complex128))
    return fast if fast is not None else schur_by_deflation(a, order)


def schur_by_deflation(a: np.ndarray, order: np.ndarray):
    """(T, Q) deflating one eigenvalue (or real pair) at a time, in ``order``: O(n^4), for any
    matrix (the fallback where the eigenvectors are too ill-conditioned)."""
    n, real = a.shape[-1], a.dtype.kind != "c"
    t, q = a.copy(), np.eye(n, dtype=a.dtype)
    k = 0
    while k < n:
        w, v = np.linalg.eig(t[k:, k:])
        j = int(np.argmin(np.abs(w - order[k])))
        pair = real and order[k].imag != 0 and k + 1 < n
        if pair:
            columns = np.stack([v[:, j].real, v[:, j].imag], 1)
        else:
            columns = (v[:, j].real if real else v[:, j])[:, None].astype(a.dtype)
        _apply(t, q, _basis(columns), k)
        if pair:
            _standardise(t, q, k)
            t[k + 2 :, k : k + 2] = 0
            k += 2
        else:
            t[k + 1 :, k] = 0
            k += 1
    return t, q


def _real_eigenvalues(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(wr, wi) of a real standard Schur form, as ``?gees`` reports them."""
    n = t.shape[0]
    wr, wi = np.diag(t).copy(), np.zeros(n)
    for k in range(n - 1):
        if t[k + 1, k] != 0:
            wi[k] = np.sqrt(abs(t[k, k + 1])) * np.sqrt(abs(t[k + 1, k]))
            wi[k + 1] = -wi[k]
    return wr, wi


def gees(a: np.ndarray, vectors: bool):
    """(T, Q (zeros unless ``vectors``), eigenvalues, sdim, info); eigenvalues are (wr, wi)
    for a real matrix, one complex array for a complex one."""
    batch, n = a.shape[:-2], a.shape[-1]
    flat = a.reshape((int(np.prod(batch)), n, n))
    ts, qs, info = np.empty_like(flat), np.empty_like(flat), np.zeros(len(flat), np.int32)
    for i, m in enumerate(flat):
        try:
            if not np.isfinite(m).all():
                raise np.linalg.LinAlgError("not finite")
            ts[i], qs[i] = _schur_one(m)
        except np.linalg.LinAlgError:
            ts[i], qs[i], info[i] = np.nan, np.nan, 1
    if not vectors:
        qs[:] = 0
    sdim = np.zeros(batch, np.int32)
    info = info.reshape(batch)
    if a.dtype.kind == "c":
        w = np.diagonal(ts, axis1=-2, axis2=-1).reshape((*batch, n))
        return ts.reshape(a.shape), qs.reshape(a.shape), (w,), sdim, info
    pairs = [_real_eigenvalues(t) for t in ts]
    wr = np.array([p[0] for p in pairs]).reshape((*batch, n))
    wi = np.array([p[1] for p in pairs]).reshape((*batch, n))
    return ts.reshape(a.shape), qs.reshape(a.shape), (wr, wi), sdim, info
