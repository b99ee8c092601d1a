"""The stated tolerance of a dot or convolution against the reference interpreter, shared by
test_dot_dtypes.py and test_convolution.py (their docstrings state it): bit for bit for integer,
pred and short complex contractions; otherwise ``2 (K + 2) eps(acc) sum |a b| + eps(result)
|ref|`` per element, NaN where the reference has NaN, equal infinities."""

from __future__ import annotations

import ml_dtypes
import numpy as np

import hlort
from hlort import dtypes
from hlort.interpreter.ops.linalg import accumulation_dtype


def _wide(x: np.ndarray) -> np.ndarray:
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def assert_matches_reference(module, args, got, k: int) -> None:
    """The tolerance of the module docstring (bitwise for integers, pred and short complex)."""
    ref = np.asarray(hlort.evaluate(module, args))
    got = np.asarray(got)
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.dtype, ref.dtype)
    result = dtypes.from_numpy(ref.dtype)
    root = module.entry.root
    acc = accumulation_dtype(root.operands[0].shape.dtype, root.operands[1].shape.dtype, result)
    if acc.kind == "i" or (result.is_complex and k <= 64):  # exact integer sums; XLA's order
        bits = lambda x: np.ascontiguousarray(x).reshape(-1).view(np.uint8)  # noqa: E731
        np.testing.assert_array_equal(bits(got), bits(ref))
        return
    magnitude = np.abs(
        _wide(np.asarray(hlort.evaluate(module, [np.abs(a).astype(a.dtype) for a in args])))
    )
    info = ml_dtypes.finfo(result.component.numpy)
    tol = 2 * (k + 2) * float(np.finfo(acc).eps) * magnitude + float(info.eps) * np.abs(_wide(ref))
    tol += float(info.smallest_subnormal)
    assert_within(got, ref, tol)


def assert_within(got: np.ndarray, ref: np.ndarray, tol: np.ndarray) -> None:
    """Per part (real, imaginary): NaN where ``ref`` has NaN, equal infinities, and every
    finite element within ``tol`` (broadcast to the shape) of the reference."""
    parts = [(got.real, ref.real), (got.imag, ref.imag)] if got.dtype.kind == "c" else [(got, ref)]
    for g, r in parts:
        g, r = g.astype(np.float64), r.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r))
        infinite = np.isinf(r)
        np.testing.assert_array_equal(g[infinite], r[infinite])
        finite = np.isfinite(r)
        excess = np.abs(g[finite] - r[finite]) - np.broadcast_to(tol, r.shape)[finite]
        assert not np.any(excess > 0), f"max excess {excess.max()} over the stated tolerance"
