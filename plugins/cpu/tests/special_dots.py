"""Dot operands built to hit every special-value rule, and the exact check of them, shared by
test_dot_special_values.py.

The operands are random normal values with, in the [batch, m, k] x [batch, k, n] matrices the
dot multiplies (then laid out as the dimension numbers say):
- lhs row 0 all -0.0 against a positive rhs column 0 (a sum of -0.0 products: +0 from the
  interpreter's +0 accumulator) and a negative column 1 (+0.0 products);
- lhs row 1 with +inf at k 0 against rhs[0, 1] = 0 (inf * 0 = NaN), other columns +-inf;
- lhs row 2 with +inf and -inf (k 0, 1) against a positive column 2 (inf - inf = NaN);
- lhs row 3 with a NaN (a NaN row); the last lhs row and rhs column with subnormals;
- complex operands: the same real parts, imaginary parts random except row 0 (-0.0);
- integers: values over the type's whole range, so sums wrap.
``spread`` adds NaN, +-inf, -0.0 and a subnormal at random places instead (dot_run.dot_values).
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

import hlort
from hlort import dtypes
from hlort.interpreter.ops.linalg import accumulation_dtype


def _subnormal(dt) -> float:
    return float(ml_dtypes.finfo(dt.component.numpy).smallest_subnormal) * 3


def _craft(a: np.ndarray, b: np.ndarray, dt) -> None:
    """Write the module docstring's patterns into float matrices a [.., m, k], b [.., k, n]."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    b[..., :, 0] = np.abs(b[..., :, 0]) + 0.5
    if n > 1:
        b[..., :, 1] = -np.abs(b[..., :, 1]) - 0.5
    a[..., 0, :] = -0.0
    if m > 1:
        a[..., 1, 0] = np.inf
        if n > 1:
            b[..., 0, 1] = 0.0
    if m > 2 and k > 1:
        a[..., 2, 0], a[..., 2, 1] = np.inf, -np.inf
        if n > 2:
            b[..., :2, 2] = np.abs(b[..., :2, 2]) + 0.5
    if m > 3:
        a[..., 3, k - 1] = np.nan
    if m > 4:
        a[..., m - 1, 0] = _subnormal(dt)
    if n > 3:
        b[..., k - 1, n - 1] = -_subnormal(dt)


def _layout(matrix: np.ndarray, dims, groups) -> np.ndarray:
    """The [batch, rows, cols] ``matrix`` as the operand of ``dims`` grouped by ``groups``."""
    perm = [d for g in groups for d in g]
    permuted = matrix.reshape([dims[d] for d in perm])
    return np.ascontiguousarray(np.transpose(permuted, np.argsort(perm)))


def special_operands(dtype: str, case, seed: int) -> list[np.ndarray]:
    """[lhs, rhs] of ``case`` = (lhs dims, rhs dims, dn) with the crafted special values."""
    lhs_dims, rhs_dims, dn = case
    dt = dtypes.from_hlo_name(dtype)
    rng = np.random.default_rng(seed)
    lc, rc = list(dn.lhs_contracting_dims), list(dn.rhs_contracting_dims)
    lb, rb = list(dn.lhs_batch_dims), list(dn.rhs_batch_dims)
    lf = [d for d in range(len(lhs_dims)) if d not in lc + lb]
    rf = [d for d in range(len(rhs_dims)) if d not in rc + rb]
    size = lambda dims, g: math.prod(dims[d] for d in g)  # noqa: E731
    batch, m, k = size(lhs_dims, lb), size(lhs_dims, lf), size(lhs_dims, lc)
    n = size(rhs_dims, rf)
    a, b = rng.standard_normal((batch, m, k)), rng.standard_normal((batch, k, n))
    if dt.is_integer or dt.is_pred:  # the type's whole range: sums wrap, exact-float bounds
        info = np.iinfo(dt.numpy) if dt.is_integer else None
        low, high = (info.min, info.max) if info else (0, 1)
        a, b = (rng.integers(low, high, x.shape, dt.numpy, endpoint=True) for x in (a, b))
    elif m and n and k:
        _craft(a, b, dt)
    if dt.is_complex:
        ai, bi = rng.standard_normal(a.shape), rng.standard_normal(b.shape)
        ai[:, :1, :] = -0.0
        a, b = a + 1j * ai, b + 1j * bi
    a = _layout(a.astype(dt.numpy), lhs_dims, (lb, lf, lc))
    b = _layout(b.astype(dt.numpy), rhs_dims, (rb, rc, rf))
    return [a, b]


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def assert_exactly_special(module, args, got, k: int) -> None:
    """Against the interpreter, per part (real, imaginary): NaN at the same places, the same
    infinities, the same sign of every zero, integers bit for bit, and every finite element
    within ``2 (K + 2) eps(acc) sum |a b| + eps(result) |ref| + 3 subnormals``."""
    ref = np.asarray(hlort.evaluate(module, args))
    got = np.asarray(got)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.dtype, ref.dtype)
    result = dtypes.from_numpy(ref.dtype)
    if not (result.is_float or result.is_complex):
        np.testing.assert_array_equal(got, ref)
        return
    root = module.entry.root
    acc = accumulation_dtype(root.operands[0].shape.dtype, root.operands[1].shape.dtype, result)
    absolute = [np.abs(a).astype(a.dtype) for a in args]
    magnitude = np.abs(_wide(np.asarray(hlort.evaluate(module, absolute))))
    info = ml_dtypes.finfo(result.component.numpy)
    tol = 2 * (k + 2) * float(np.finfo(acc).eps) * magnitude + float(info.eps) * np.abs(_wide(ref))
    tol += 3 * float(info.smallest_subnormal)
    pairs = [(got.real, ref.real), (got.imag, ref.imag)] if result.is_complex else [(got, ref)]
    for part, (g, r) in zip(("real", "imag"), pairs, strict=False):
        g, r = g.astype(np.float64), r.astype(np.float64)
        where = lambda mask: np.argwhere(mask)[:5].tolist()  # noqa: E731
        nan = np.isnan(g) != np.isnan(r)
        assert not nan.any(), f"{part}: NaN differs at {where(nan)} ({nan.sum()} elements)"
        inf = np.isinf(r) & (g != r)
        assert not inf.any(), f"{part}: infinity differs at {where(inf)}: {g[inf][:5]}"
        zero = (r == 0) & (g == 0) & (np.signbit(g) != np.signbit(r))
        assert not zero.any(), f"{part}: sign of zero differs at {where(zero)}: {g[zero][:5]}"
        finite = np.isfinite(r)
        with np.errstate(invalid="ignore"):  # inf - inf where both agree on an infinity
            excess = np.abs(g - r) - np.broadcast_to(tol, r.shape)
        bad = finite & ~(excess <= 0)
        assert not bad.any(), f"{part}: beyond the tolerance at {where(bad)}"
