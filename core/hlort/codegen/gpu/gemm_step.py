"""Dots as vendor gemm calls: which dots map onto a row-major (batched) gemm, and how.

A dot maps when, after its batch dimensions (leading, in order, on both sides), each operand has
one contracting dimension and at most one free dimension, and both operands are f16, bf16, f32,
f64, c64 or c128 of one type (the result that type, or f32 for the real ones). Then
``C[b] = op(A[b]) @ op(B[b])`` with op a (plain, never conjugating) transpose when the
contracting dimension of A comes first (or that of B comes last); complex ones compute in their
own type (cgemm / zgemm) when they contract more than ``ORDERED_COMPLEX_MAX_K`` terms: shorter
complex dots are the dot kernel's, summed in XLA's order bit for bit (a library's blocked,
fused sums are many ULP off where products cancel, and the StableHLO corpus checks complex dots
to 3 ULP; the CPU plugin draws the same line). Every other dot (integer and pred dots, several
contracting dimensions, ...) is hlort's tiled dot kernel (dot_plan.py), with the reason it is
no gemm.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.codegen.gpu.program import GemmSpec
from hlort.ir.instruction import Instruction

GEMM_DTYPES = (dtypes.F16, dtypes.BF16, dtypes.F32, dtypes.F64, dtypes.C64, dtypes.C128)
ORDERED_COMPLEX_MAX_K = 64  # the interpreter's in-order limit for real sums (linalg.py)


def gemm_spec(dot: Instruction) -> tuple[GemmSpec | None, str]:
    """(spec, "") or (None, why this dot is no gemm call)."""
    lhs, rhs = dot.operands
    dn = dot.attrs["dot_dimension_numbers"]
    la, ra = lhs.shape, rhs.shape
    if la.dtype is not ra.dtype or la.dtype not in GEMM_DTYPES:
        return None, (
            f"gemm takes f16/bf16/f32/f64/c64/c128 operands of one type, not {la.dtype}/{ra.dtype}"
        )
    out = dot.shape.dtype
    if out is not la.dtype and (out is not dtypes.F32 or la.dtype.is_complex):
        return None, f"gemm result {out} from {la.dtype} operands"
    nb = len(dn.lhs_batch_dims)
    if tuple(dn.lhs_batch_dims) != tuple(range(nb)) or tuple(dn.rhs_batch_dims) != tuple(range(nb)):
        return None, "batch dimensions are not the leading dimensions"
    if len(dn.lhs_contracting_dims) != 1 or len(dn.rhs_contracting_dims) != 1:
        return None, "gemm contracts exactly one dimension"
    if la.rank - nb > 2 or ra.rank - nb > 2:
        return None, "an operand has more than one free dimension"
    lc, rc = dn.lhs_contracting_dims[0], dn.rhs_contracting_dims[0]
    k = la.dims[lc]
    if la.dtype.is_complex and k <= ORDERED_COMPLEX_MAX_K:
        return None, f"a complex dot of K = {k} <= {ORDERED_COMPLEX_MAX_K} is summed in order"
    lhs_free = [d for d in range(nb, la.rank) if d != lc]
    rhs_free = [d for d in range(nb, ra.rank) if d != rc]
    m = la.dims[lhs_free[0]] if lhs_free else 1
    n = ra.dims[rhs_free[0]] if rhs_free else 1
    batch = 1
    for d in la.dims[:nb]:
        batch *= d
    transpose_a = bool(lhs_free) and lc < lhs_free[0]
    transpose_b = bool(rhs_free) and rc > rhs_free[0]
    compute = la.dtype.name if la.dtype.is_complex else "f64" if la.dtype is dtypes.F64 else "f32"
    spec = GemmSpec(
        m,
        n,
        k,
        batch,
        la.dtype.name,
        ra.dtype.name,
        out.name,
        transpose_a,
        transpose_b,
        compute_dtype=compute,
    )
    return spec, ""


__all__ = ["GEMM_DTYPES", "ORDERED_COMPLEX_MAX_K", "gemm_spec"]
