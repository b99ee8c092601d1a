"""Interpreter: dot, cholesky, triangular-solve, and the arithmetic contractions share.

Contractions (dot, convolution) convert both operands to one wide accumulation type, multiply and
sum there, and convert the sum to the declared result type once, as XLA does for a "preferred
element type": f32 for f8/f16/bf16/f32, f64 when an operand or the result is f64, c64 / c128 for
complex, and int64 for pred and integers. Integer sums wrap modulo 2^64 and the final conversion
keeps the low bits, which is exactly arithmetic modulo 2^bits of the result type. A pred dot
into pred is the OR of ANDs; into an integer or float type it counts the true products.

Integer operands go to a float type instead when the dot mixes families (f32 x s32) or the
result is a float (s8 x s8 into f32, JAX's ``preferred_element_type``): as in XLA's operand
upcasting, they are converted to float and the products summed there (in int64, s32 x s32 sums
would wrap where XLA's float sum does not). XLA converts them to the result type itself; for
an f16/bf16 result that rounds integers the narrow type cannot hold (s16 beyond 2048 into f16),
which hlort's f32 keeps exact: the one place hlort is more precise than XLA here.

Summation order: XLA's evaluator and naive loop emitters add the products to a zero accumulator
one contraction index at a time, each product rounded before it is added, a complex product
being the naive ``(ac - bd) + (ad + bc)i``; the StableHLO corpus' complex dots match that bit for
bit. (XLA's CPU emitter for small real dots uses fused multiply-adds where the hardware has
them; the corpus' real dots agree with the unfused sum within 1 ULP.) BLAS (np.matmul) blocks,
vectorizes and fuses differently, which for a complex dot with cancellation is off by many ULP.
So a contraction of moderate size (at most 2^24 products), complex or real float with K <= 64,
is summed in that order (a loop over K, vectorized over everything else); larger ones keep
BLAS, whose rounding is within tolerance, and a complex one has the elements BLAS left
non-finite put right (:mod:`hlort.interpreter.ops.complex_specials`: complex gemm makes an
infinite sum NaN).

Cholesky and triangular-solve compute in f64 / c128 whatever the element type and round once.
"""

from __future__ import annotations

import math

import numpy as np

from hlort.dtypes import DType
from hlort.interpreter.ops.complex_specials import repair_specials
from hlort.interpreter.ops.float_rounding import widen
from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import Transpose
from hlort.ir.opcodes import Opcode


def accumulation_dtype(lhs: DType, rhs: DType, result: DType) -> np.dtype:
    """The NumPy type a contraction of ``lhs`` x ``rhs`` into ``result`` sums in."""
    types = (lhs, rhs, result)
    if any(t.is_complex for t in types):
        wide = any(t.name in ("c128", "f64") for t in types)
        return np.dtype(np.complex128 if wide else np.complex64)
    integer_into_float = result.is_float and (lhs.is_integer or rhs.is_integer)
    if not (lhs.is_float or rhs.is_float or integer_into_float):
        return np.dtype(np.int64)  # pred and integers; pred into float too (an exact count)
    return np.dtype(np.float64 if any(t.name == "f64" for t in types) else np.float32)


def to_accumulation(x: np.ndarray, acc: np.dtype) -> np.ndarray:
    """``x`` in the accumulation type; u64 wraps into int64 (same bits, same products mod 2^64)."""
    return x.astype(acc, copy=False)


def from_accumulation(x: np.ndarray, result: DType) -> np.ndarray:
    """Round (floats) or wrap (integers) an accumulated array into the result type."""
    if result.is_pred:
        return np.asarray(x != 0, order="C")
    with np.errstate(over="ignore", invalid="ignore"):
        return x.astype(result.numpy, order="C")


SEQUENTIAL_MAX_K = 64
"""Real float contractions up to this length are summed in order (complex ones: any length)."""
SEQUENTIAL_MAX_PRODUCTS = 1 << 24
"""Only contractions of at most this many products are (well under a second); others use BLAS."""


def contract(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` ([..., M, K] x [..., K, N], one accumulation type), summed in XLA's order where
    rounding would otherwise differ visibly (see the module docstring); else np.matmul."""
    k = a.shape[-1]
    kind = a.dtype.kind
    if kind in "fc" and k > 0:
        shape = _product_shape(a, b)
        products = math.prod(shape) * k
        if products <= SEQUENTIAL_MAX_PRODUCTS and (k <= SEQUENTIAL_MAX_K or kind == "c"):
            return _contract_in_order(a, b, shape)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.matmul(a, b)
        if kind == "c" and k > 0:  # complex gemm's alpha scaling makes inf NaN: undone
            repair_specials(a, b, out)
        return out


def _product_shape(a: np.ndarray, b: np.ndarray) -> tuple[int, ...]:
    return (*np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), a.shape[-2], b.shape[-1])


def _contract_in_order(a: np.ndarray, b: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``acc += a[..., :, k] * b[..., k, :]`` for k = 0, 1, ... from +0; complex products and
    sums are done on the real and imaginary parts, so no library complex multiply is involved."""
    with np.errstate(over="ignore", invalid="ignore"):
        if a.dtype.kind != "c":
            out = np.zeros(shape, a.dtype)
            for j in range(a.shape[-1]):
                out += a[..., :, j, None] * b[..., None, j, :]
            return out
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        re = np.zeros(shape, ar.dtype)
        im = np.zeros(shape, ar.dtype)
        for j in range(a.shape[-1]):
            xr, xi = ar[..., :, j, None], ai[..., :, j, None]
            yr, yi = br[..., None, j, :], bi[..., None, j, :]
            re += xr * yr - xi * yi
            im += xr * yi + xi * yr
    out = np.empty(shape, a.dtype)
    out.real, out.imag = re, im
    return out


@evaluates(Opcode.DOT)
def _dot(ev, instr, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    dn = instr.attrs["dot_dimension_numbers"]
    result = instr.shape
    lc, rc = list(dn.lhs_contracting_dims), list(dn.rhs_contracting_dims)
    lb, rb = list(dn.lhs_batch_dims), list(dn.rhs_batch_dims)
    lf = [d for d in range(lhs.ndim) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.ndim) if d not in rc and d not in rb]
    batch = math.prod(lhs.shape[d] for d in lb)
    m = math.prod(lhs.shape[d] for d in lf)
    k = math.prod(lhs.shape[d] for d in lc)
    n = math.prod(rhs.shape[d] for d in rf)
    acc = accumulation_dtype(
        instr.operands[0].shape.dtype, instr.operands[1].shape.dtype, result.dtype
    )
    a = to_accumulation(np.transpose(lhs, lb + lf + lc), acc).reshape(batch, m, k)
    b = to_accumulation(np.transpose(rhs, rb + rc + rf), acc).reshape(batch, k, n)
    return from_accumulation(contract(a, b).reshape(result.dims), result.dtype)


def cholesky_lower_with_info(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower factors of the Hermitian matrices whose lower triangles ``a`` holds, and LAPACK's
    ``info`` per matrix: 0, or the (1-based) column whose pivot is not strictly positive (or
    NaN). A matrix that fails is all NaN, as JAX makes it from that flag.

    Column by column (a loop over n, vectorized over the batch and the rows). Only the lower
    triangle and the real part of the diagonal are read.
    """
    n = a.shape[-1]
    factor = np.zeros_like(a)
    info = np.zeros(a.shape[:-2], dtype=np.int32)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            row = factor[..., j, :j]
            pivot = a[..., j, j].real - np.sum((row * row.conj()).real, axis=-1)
            info = np.where((info == 0) & ~(pivot > 0), j + 1, info).astype(np.int32)
            diag = np.sqrt(np.where(pivot > 0, pivot, np.nan))
            factor[..., j, j] = diag
            below = a[..., j + 1 :, j] - np.einsum(
                "...ik,...k->...i", factor[..., j + 1 :, :j], row.conj()
            )
            factor[..., j + 1 :, j] = below / diag[..., None]
    factor[info != 0] = np.nan
    return factor, info


def _cholesky_lower(a: np.ndarray) -> np.ndarray:
    """Lower factor of the Hermitian matrices whose lower triangles ``a`` holds; NaN if not PD."""
    return cholesky_lower_with_info(a)[0]


@evaluates(Opcode.CHOLESKY)
def _cholesky(ev, instr, a: np.ndarray) -> np.ndarray:
    """``lower``: a = L L^H with L lower; otherwise a = U^H U with U upper.

    Only the named triangle of ``a`` is read; the other triangle of the result is zero.
    """
    dtype = instr.shape.dtype
    x = widen(a)
    if instr.attrs.get("lower", False):
        out = _cholesky_lower(x)
    else:
        out = np.conj(np.swapaxes(_cholesky_lower(np.conj(np.swapaxes(x, -1, -2))), -1, -2))
    return from_accumulation(out, dtype)


def _substitute(t: np.ndarray, b: np.ndarray, lower: bool) -> np.ndarray:
    """Solve t x = b for triangular ``t`` by forward (lower) or back substitution, row by row."""
    n = t.shape[-1]
    x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], t.dtype)
    rows = range(n) if lower else range(n - 1, -1, -1)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in rows:
            known = slice(0, i) if lower else slice(i + 1, n)
            partial = np.einsum("...k,...kj->...j", t[..., i, known], x[..., known, :])
            x[..., i, :] = (b[..., i, :] - partial) / t[..., i, i][..., None]
    return x


@evaluates(Opcode.TRIANGULAR_SOLVE)
def _triangular_solve(ev, instr, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """op(a) x = b (left_side) or x op(a) = b, op = identity, transpose or adjoint."""
    attrs = instr.attrs
    x = solve_triangular(
        widen(a),
        widen(b),
        left=attrs.get("left_side", False),
        lower=attrs.get("lower", False),
        unit=attrs.get("unit_diagonal", False),
        transpose=attrs.get("transpose_a", Transpose.NO_TRANSPOSE),
    )
    return from_accumulation(x, instr.shape.dtype)


def solve_triangular(
    a: np.ndarray, b: np.ndarray, *, left: bool, lower: bool, unit: bool, transpose: Transpose
) -> np.ndarray:
    """op(a) x = b (``left``) or x op(a) = b, in the (wide) type of ``a`` and ``b``.

    Only the ``lower`` (or upper) triangle of ``a`` is read, and not its diagonal when
    ``unit``; a zero on the diagonal gives inf / NaN, as IEEE division does.
    """
    n = a.shape[-1]
    keep = np.tril(np.ones((n, n), bool), -1) if lower else np.triu(np.ones((n, n), bool), 1)
    t = np.where(keep, a, 0).astype(a.dtype)
    eye = np.eye(n, dtype=bool)
    t = np.where(eye, 1 if unit else a, t)
    if transpose is not Transpose.NO_TRANSPOSE:
        t = np.swapaxes(t, -1, -2)
        if transpose is Transpose.ADJOINT:
            t = np.conj(t)
        lower = not lower
    rhs = b
    if not left:  # x t = b  <=>  t^T x^T = b^T
        t, rhs, lower = np.swapaxes(t, -1, -2), np.swapaxes(rhs, -1, -2), not lower
    x = _substitute(t, rhs, lower)
    if not left:
        x = np.swapaxes(x, -1, -2)
    return x
