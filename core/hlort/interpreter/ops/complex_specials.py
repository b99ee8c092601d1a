"""Complex BLAS products with NaN, infinities and zero signs put right: the elements a gemm got
non-finite are summed again in XLA's order, and -0.0 parts become +0.0.

A complex gemm (OpenBLAS's cgemm/zgemm, Eigen's, which XLA:CPU calls) scales its sums by
``alpha = 1 + 0i`` as a complex multiply, so an infinite sum ``inf + x i`` becomes
``(inf - 0 x) + (x + 0 inf) i = NaN + NaN i``. The dot the StableHLO spec defines (sum of
products, each product the complex multiply, as the spec's reference interpreter and XLA's
evaluator compute it with C++ ``std::complex``) keeps that infinity, and so does this
interpreter's in-order sum (``linalg._contract_in_order``). Whether an element is non-finite does
not depend on the summation order (a product with a NaN, ``inf * 0`` or infinities of both signs
make NaN, one-signed infinities stay infinite, finite products stay finite but for overflow), so
a BLAS product is right wherever it is finite, and wrong, if at all, only where it is not. Those
elements are few in practice and cheap to find: one ``isfinite`` pass over the result (O(m n),
against the gemm's O(m n k)) when all is finite, the common case. Then every row of ``a`` and
column of ``b`` holding a NaN or infinity (all of whose products are non-finite) is summed again
in order, and so is any element left non-finite outside them (an overflow; the order can also
overflow one way and not the other, which stays within the dot's error bound elsewhere).

Zero signs: a sum from a +0 accumulator is never -0.0 (``+0 + -0 = +0``), while a complex gemm
returns -0.0 parts (the ``-0 x`` terms of its alpha scaling); adding +0 once, O(m n), makes
them +0 and changes nothing else (NaN stays NaN).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

InOrder = Callable[[np.ndarray, np.ndarray], np.ndarray]


def repair_specials(a: np.ndarray, b: np.ndarray, out: np.ndarray, in_order: InOrder) -> None:
    """Re-sum, in place and with ``in_order`` (a [m, k] x [k, n] complex product summed in XLA's
    order), every element of the complex product ``out`` = ``a @ b`` ([..., m, n]) that BLAS
    left non-finite, and -0.0 parts as +0.0. Real products are left alone: a real gemm scales
    by a real 1 and starts its sums from +0."""
    if out.dtype.kind != "c" or out.size == 0:
        return
    np.add(out, 0, out=out)
    if np.isfinite(out).all():
        return
    batch = out.shape[:-2]
    a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    with np.errstate(over="ignore", invalid="ignore"):  # NaN and infinities are the point
        for index in np.ndindex(*batch):
            bad = ~np.isfinite(out[index])
            if bad.any():
                _repair_matrix(a[index], b[index], out[index], bad, in_order)


def _repair_matrix(a, b, out, bad, in_order: InOrder) -> None:
    rows = np.flatnonzero(~np.isfinite(a).all(axis=1))
    cols = np.flatnonzero(~np.isfinite(b).all(axis=0))
    if rows.size:
        out[rows, :] = in_order(a[rows], b)
        bad[rows, :] = False
    if cols.size:
        out[:, cols] = in_order(a, b[:, cols])
        bad[:, cols] = False
    if bad.any():  # finite operands, an overflowed sum: only those elements
        r, c = np.flatnonzero(bad.any(axis=1)), np.flatnonzero(bad.any(axis=0))
        block, mask = out[np.ix_(r, c)], bad[np.ix_(r, c)]
        block[mask] = in_order(a[r], b[:, c])[mask]
        out[np.ix_(r, c)] = block
