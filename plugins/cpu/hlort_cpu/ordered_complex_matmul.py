"""Complex matmul summed in XLA's order: naive complex products, added one contraction index at a
time to a zero accumulator.

BLAS (cgemm/zgemm) blocks the sum and fuses multiply-adds; for a complex dot with cancellation
its result is many ULP away from XLA's, and the StableHLO corpus checks complex dots to 3 ULP
(the reference interpreter sums the same way, see ``hlort.interpreter.ops.linalg``). This loop is
over the contraction index only, each step vectorized over every output element, so it serves
short contractions; long ones go to BLAS (see :mod:`hlort_cpu.contraction_arithmetic`).
"""

from __future__ import annotations

import numpy as np


def complex_matmul_in_order(
    a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None
) -> np.ndarray:
    """``a @ b`` for complex [..., M, K] x [..., K, N]:
    ``acc += (ar br - ai bi) + (ar bi + ai br)i`` for k = 0, 1, ... from +0, each product, sum
    and difference rounded as written."""
    shape = (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])
    part = a.real.dtype
    a_t = np.swapaxes(a, -1, -2)  # [..., K, M]: column k is a contiguous row after the copies
    ar, ai = np.ascontiguousarray(a_t.real), np.ascontiguousarray(a_t.imag)
    br, bi = np.ascontiguousarray(b.real), np.ascontiguousarray(b.imag)
    re, im = np.zeros(shape, part), np.zeros(shape, part)
    first, second = np.empty(shape, part), np.empty(shape, part)
    for k in range(a.shape[-1]):
        xr, xi = ar[..., k, :, None], ai[..., k, :, None]
        yr, yi = br[..., k, None, :], bi[..., k, None, :]
        np.multiply(xr, yr, out=first)
        np.multiply(xi, yi, out=second)
        np.subtract(first, second, out=first)
        np.add(re, first, out=re)
        np.multiply(xr, yi, out=first)
        np.multiply(xi, yr, out=second)
        np.add(first, second, out=first)
        np.add(im, first, out=im)
    if out is None:
        out = np.empty(shape, a.dtype)
    out.real, out.imag = re, im
    return out
