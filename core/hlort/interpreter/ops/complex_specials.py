"""Complex BLAS products with NaN, infinities and zero signs put right: the elements a complex
gemm got non-finite are computed again from four real gemms, and -0.0 parts become +0.0.

A complex gemm (OpenBLAS's cgemm/zgemm, and Eigen's, which XLA:CPU calls) scales its sums by
``alpha = 1 + 0i`` as a complex multiply, so an infinite sum ``inf + x i`` becomes
``(inf - 0 x) + (x + 0 inf) i = NaN + NaN i``. The dot the StableHLO spec defines (a sum of
products, each the complex multiply, as the spec's reference interpreter and XLA's evaluator
compute it with C++ ``std::complex``) keeps that infinity, and so does this interpreter's
in-order sum (``linalg._contract_in_order``: ``acc += (ar br - ai bi) + (ar bi + ai br) i``).

Which elements are non-finite, and which infinity each is, does not depend on the summation
order: a part is NaN when one of its 2K signed real terms (``ar br``, ``-ai bi`` for the real
part) is NaN (a NaN operand, ``inf * 0``) or there are infinities of both signs, else the one
sign's infinity if there is one, else finite (but for overflow, which the order can change). So
a complex BLAS product is right wherever it is finite, and its non-finite elements are found in
one pass over the result (O(m n), against the gemm's O(m n k)). Those are put right with the
same terms summed by real BLAS, which has no complex scaling: ``re = ar @ br - ai @ bi``,
``im = ar @ bi + ai @ br``, for every row of ``a`` and column of ``b`` holding a NaN or an
infinity (all of whose elements are non-finite). Their parts are NaN or the one sign's
infinity whatever the order unless a sum of their finite terms can overflow (``may_overflow``
bounds them by ``|a| @ |b|`` of the finite parts, in f64): then the order decides (finite sums
gone to -inf before a +inf product make NaN; the real gemms' ``ar @ br - ai @ bi`` is inf - inf
where the in-order sum is inf), and those elements are summed in order as below. Any element
left non-finite outside them (finite operands, an overflowed sum) is summed again in the
interpreter's order, since which
sums overflow does depend on it (``ar @ br - ai @ bi`` is inf - inf where every product's
``ar br - ai bi`` is 0), up to ``IN_ORDER_MAX_PRODUCTS`` products per call (NumPy, ~14 ns a
product); beyond that from four real gemms (the overflow then as BLAS's order makes it). That
costs about one complex gemm of the rows and columns redone, never more than two of the whole
product (four more real ones, in f64, where values come near overflow), plus at most ~0.25 s of
in-order sums. Measured (one thread, process CPU time, c64 1024 x 1024 x 1024, 8 rows holding
inf): the cgemm 49-56 ms, the repair 16-17 ms, 2.6-3.6 ms of it the overflow check.

Zero signs: a sum from a +0 accumulator is never -0.0 (``+0 + -0 = +0``), while a complex gemm
returns -0.0 parts (its alpha scaling, and sums it starts from their first product); adding +0
once, in the same pass, makes them +0 and changes nothing else.
"""

from __future__ import annotations

import numpy as np


def repair_specials(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """Put right, in place, the elements of the complex BLAS product ``out = a @ b`` ([..., m, k]
    x [..., k, n]) that it left non-finite, and its -0.0 parts (module docstring). Real
    products are left alone: a real gemm scales by a real 1 and sums from +0."""
    if out.dtype.kind != "c" or out.size == 0 or all_finite_after_plus_zero(out):
        return
    batch = out.shape[:-2]
    a = np.broadcast_to(a, (*batch, *a.shape[-2:]))
    b = np.broadcast_to(b, (*batch, *b.shape[-2:]))
    budget = [IN_ORDER_MAX_PRODUCTS]
    with np.errstate(over="ignore", invalid="ignore"):  # NaN and infinities are the point
        for index in np.ndindex(*batch):
            bad = ~np.isfinite(out[index])
            if bad.any():
                _repair_matrix(a[index], b[index], out[index], bad, budget)


def real_gemm_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Complex ``a @ b`` ([m, k] x [k, n]) as four real products, no complex scaling."""
    ar, ai, br, bi = a.real, a.imag, b.real, b.imag
    out = np.empty((a.shape[0], b.shape[1]), a.dtype)
    out.real = np.matmul(ar, br) - np.matmul(ai, bi)
    out.imag = np.matmul(ar, bi) + np.matmul(ai, br)
    return out


def _repair_matrix(a, b, out, bad, budget: list[int]) -> None:
    rows = np.flatnonzero(~np.isfinite(a).all(axis=1))
    cols = np.flatnonzero(~np.isfinite(b).all(axis=0))
    if rows.size:
        out[rows, :] = real_gemm_product(a[rows], b)
        bad[rows, :] = may_overflow(a[rows], b)
    if cols.size:
        out[:, cols] = real_gemm_product(a, b[:, cols])
        bad[:, cols] = may_overflow(a, b[:, cols])
    if not bad.any():
        return
    rows, cols = np.nonzero(bad)  # finite operands, an overflowed sum: only those elements
    products = rows.size * a.shape[1]
    if products > budget[0]:  # too many to sum in order: four real gemms of their block
        r, c = np.unique(rows), np.unique(cols)
        block, mask = out[np.ix_(r, c)], bad[np.ix_(r, c)]
        block[mask] = real_gemm_product(a[r], b[:, c])[mask]
        out[np.ix_(r, c)] = block
        return
    budget[0] -= products
    step = max(1, _GATHER_MAX // max(1, a.shape[1]))
    for s in range(0, rows.size, step):
        r, c = rows[s : s + step], cols[s : s + step]
        out[r, c] = _sums_in_order(a[r], b[:, c].T)


def may_overflow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element of ``a @ b``: whether a sum of its finite real terms could overflow in some
    order, so that the order decides the result (an infinity with the finite sums gone to the
    other infinity first is NaN; ``ar @ br - ai @ bi`` can be inf - inf where the in-order sum
    is inf). Otherwise its parts are order-free: NaN, or the one sign's infinity (module
    docstring). Bounded by the sums of |finite terms| in f64, with a factor 2 to spare for the
    bound's own rounding; for c128 an f64 bound that overflows counts as possible overflow.
    First ``2 K max|a| max|b|`` (no gemm): values far from overflow, the usual case, stop there."""
    limit = float(np.finfo(a.real.dtype).max) / 2
    if 2.0 * a.shape[1] * _largest_finite(a) * _largest_finite(b) <= limit:
        return np.zeros((a.shape[0], b.shape[1]), bool)
    finite = lambda x: np.where(np.isfinite(x), np.abs(x), 0).astype(np.float64)  # noqa: E731
    ar, ai, br, bi = finite(a.real), finite(a.imag), finite(b.real), finite(b.imag)
    real = np.matmul(ar, br) + np.matmul(ai, bi)
    imag = np.matmul(ar, bi) + np.matmul(ai, br)
    return ~((real <= limit) & (imag <= limit))


def _largest_finite(x: np.ndarray) -> float:
    """max |part| over the finite real and imaginary parts of ``x`` (0 when none)."""
    largest = 0.0
    for part in (x.real, x.imag):
        finite = np.abs(part[np.isfinite(part)])
        largest = max(largest, float(finite.max()) if finite.size else 0.0)
    return largest


# Overflowed elements summed in order per repair (all of them when the whole product has at
# most this many products, as the interpreter sums every such product in order: then the two
# agree exactly); beyond it four real gemms, ~14 ns a product in order against ~0.1 in BLAS.
IN_ORDER_MAX_PRODUCTS = 1 << 24
_GATHER_MAX = 1 << 20  # elements of the gathered rows and columns summed at once


def _sums_in_order(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``sum_k x[e, k] y[e, k]`` per element e, in k order from +0 as the interpreter sums
    (``linalg._contract_in_order``): which sums overflow depends on that order (the four real
    gemms overflow ``ar @ br`` where ``ar br - ai bi`` cancels). A cumulative sum is sequential;
    it starts from the first product instead of +0, which differs only in a -0.0, and the +0
    added at the end makes that +0 as well."""
    xr, xi, yr, yi = x.real, x.imag, y.real, y.imag
    out = np.empty(x.shape[0], x.dtype)
    out.real = np.cumsum(xr * yr - xi * yi, axis=1)[:, -1] + 0.0
    out.imag = np.cumsum(xr * yi + xi * yr, axis=1)[:, -1] + 0.0
    return out


SCAN_MAX_PARTS = 1 << 12  # parts up to which isfinite beats the x . x check's overheads


def all_finite_after_plus_zero(out: np.ndarray) -> bool:
    """``out += 0`` (-0.0 parts become +0.0), then whether every part is finite. On the parts as
    one float vector: the add, then ``x . x`` (BLAS, one read) is finite exactly when every part
    is, but for squares overflowing (|x| > ~1e19 in f32), where ``isfinite`` decides. Measured
    (one thread, process CPU time) 2.4-3.2 ms for a 2048 x 2048 c64 result against 336-356 ms
    for its cgemm (K 2048): under 1%; ``isfinite(out).all()`` alone took 8 ms."""
    if not out.flags.c_contiguous:
        np.add(out, 0, out=out)
        return bool(np.isfinite(out).all())
    parts = out.reshape(-1).view(out.real.dtype)
    np.add(parts, 0, out=parts)
    if parts.size <= SCAN_MAX_PARTS:  # small: no BLAS call, no errstate (~1 us each)
        return bool(np.isfinite(parts).all())
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.dot(parts, parts)):
            return True
    return bool(np.isfinite(parts).all())
