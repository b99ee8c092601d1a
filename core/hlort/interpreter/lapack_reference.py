"""What the LAPACK routines JAX calls on CPU compute, on logical (row-major) NumPy arrays.

JAX lowers ``jnp.linalg`` on CPU to typed-FFI custom calls (``lapack_sgetrf_ffi``...) whose
operands and results are laid out column-major (``operand_layouts`` / ``result_layouts``
``{0,1}`` and batch dimensions major). Layout only says where the bytes go; hlort's values are
logical arrays, so each routine here is LAPACK's result on the logical matrix, batch dimensions
leading. Every routine works in f64 / c128 (the caller widens and rounds once), as the
interpreter's cholesky and triangular-solve do.

Semantics kept from LAPACK, because JAX's code around the calls depends on them: ``getrf``'s
pivots are 1-based row interchanges chosen by the largest ``|re| + |im|`` (LAPACK's ``i?amax``),
``info`` is the first zero pivot and the factorization still completes; ``geqrf`` returns the
Householder vectors below the diagonal of R and ``tau`` (LAPACK's ``?larfg`` convention, so
``orgqr`` of them is the Q of the same R); ``potrf`` leaves the other triangle as it was; an
eigen or singular value problem reports ``info`` 0 or 1 (did not converge: NaN results).
Where LAPACK leaves an output unspecified (``gesdd``'s overwritten input, vectors not asked
for), hlort returns the input, respectively zeros.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.ops.linalg import cholesky_lower_with_info, solve_triangular
from hlort.ir.attributes import Transpose


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


def _batch_info(shape: tuple[int, ...], failed: np.ndarray | None = None) -> np.ndarray:
    if failed is None:
        return np.zeros(shape, np.int32)
    return np.asarray(failed, np.int32).reshape(shape)


def potrf(a: np.ndarray, lower: bool) -> tuple[np.ndarray, np.ndarray]:
    """Cholesky of the ``lower`` (or upper) triangle; the other triangle is returned as given.
    A matrix that is not positive definite has its factor triangle all NaN and ``info`` > 0."""
    if lower:
        factor, info = cholesky_lower_with_info(a)
    else:
        low, info = cholesky_lower_with_info(np.conj(_swap(a)))
        factor = np.conj(_swap(low))
    n = a.shape[-1]
    triangle = np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))
    return np.where(triangle, factor, a), info


def getrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LU with partial pivoting: (L and U packed, 1-based pivots, info)."""
    m, n = a.shape[-2:]
    batch = a.shape[:-2]
    lu = a.reshape((-1, m, n)).copy()
    k = min(m, n)
    pivots = np.zeros((lu.shape[0], k), np.int32)
    info = np.zeros(lu.shape[0], np.int32)
    rows = np.arange(lu.shape[0])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(k):
            column = lu[:, j:, j]
            size = (
                np.abs(column.real) + np.abs(column.imag)
                if lu.dtype.kind == "c"
                else (np.abs(column))
            )
            p = np.argmax(size, axis=-1) + j
            pivots[:, j] = p + 1
            top, chosen = lu[rows, j].copy(), lu[rows, p].copy()
            lu[rows, p], lu[rows, j] = top, chosen
            pivot = lu[:, j, j]
            zero = pivot == 0
            info = np.where((info == 0) & zero, j + 1, info).astype(np.int32)
            scale = np.where(zero, 1, pivot)
            lu[:, j + 1 :, j] /= scale[:, None]
            lu[:, j + 1 :, j + 1 :] -= lu[:, j + 1 :, j, None] * lu[:, j, None, j + 1 :]
    return lu.reshape(a.shape), pivots.reshape((*batch, k)), info.reshape(batch)


def geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Householder QR: R on and above the diagonal, the reflectors below it, and ``tau``."""
    if a.shape[-1] == 0 or a.shape[-2] == 0:
        return a.copy(), np.zeros((*a.shape[:-2], 0), a.dtype)
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK's geqrf, Fortran order: h is transposed
    return _swap(h).copy(), tau


def orgqr(a: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The first ``n`` columns of Q = H_1 ... H_k from ``geqrf``'s reflectors and ``tau``."""
    m, n = a.shape[-2:]
    k = tau.shape[-1]
    q = np.broadcast_to(np.eye(m, n, dtype=a.dtype), a.shape).copy()
    for i in range(k - 1, -1, -1):
        v = np.zeros((*a.shape[:-2], m - i), a.dtype)
        v[..., 0] = 1
        v[..., 1:] = a[..., i + 1 :, i]
        block = q[..., i:, :]
        projection = np.einsum("...r,...rc->...c", v.conj(), block)
        q[..., i:, :] = block - tau[..., i, None, None] * v[..., :, None] * projection[..., None, :]
    return q


def eigh(a: np.ndarray, lower: bool, vectors: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eigenvalues ascending and (``vectors``) eigenvectors in columns, from one triangle."""
    batch = a.shape[:-2]
    with np.errstate(invalid="ignore"):
        try:
            w, v = np.linalg.eigh(a, UPLO="L" if lower else "U")
        except np.linalg.LinAlgError:
            w = np.full(a.shape[:-1], np.nan)
            v = np.full(a.shape, np.nan, a.dtype)
    failed = np.isnan(w).any(axis=-1)
    return (v if vectors else a.copy()), w, _batch_info(batch, failed)


def svd(a: np.ndarray, mode: str, u_shape, vt_shape):
    """(input, singular values descending, U, V^H, info) for ``mode`` A (full), S (thin) or
    N (values only: U and V^H, which LAPACK does not touch, are zeros of the declared shapes)."""
    batch = a.shape[:-2]
    with np.errstate(invalid="ignore"):
        try:
            if mode == "N":
                s = np.linalg.svd(a, compute_uv=False)
                u = np.zeros(u_shape, a.dtype)
                vt = np.zeros(vt_shape, a.dtype)
            else:
                u, s, vt = np.linalg.svd(a, full_matrices=mode == "A")
        except np.linalg.LinAlgError:
            s = np.full((*batch, min(a.shape[-2:])), np.nan)
            u, vt = np.full(u_shape, np.nan, a.dtype), np.full(vt_shape, np.nan, a.dtype)
    failed = np.isnan(s).any(axis=-1)
    return a.copy(), s, u, vt, _batch_info(batch, failed)


TRANSPOSES = {"N": Transpose.NO_TRANSPOSE, "T": Transpose.TRANSPOSE, "C": Transpose.ADJOINT}


def trsm(
    a: np.ndarray,
    b: np.ndarray,
    left: bool,
    lower: bool,
    transpose: str,
    unit: bool,
    alpha: complex = 1,
) -> np.ndarray:
    """BLAS trsm: op(a) x = alpha b (``left``) or x op(a) = alpha b. As reference BLAS does,
    ``alpha b`` is formed first (only for alpha != 1), and alpha = 0 gives zeros without
    reading ``a`` or ``b`` (so no NaN from them)."""
    if alpha == 0:
        return np.zeros(b.shape, np.result_type(a, b))
    if alpha != 1:
        with np.errstate(all="ignore"):
            b = b * np.asarray(alpha, b.dtype)
    return solve_triangular(
        a, b, left=left, lower=lower, unit=unit, transpose=TRANSPOSES[transpose]
    )
