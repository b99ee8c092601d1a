"""The arithmetic of a compiled contraction (dot, convolution): which NumPy type the products
are summed in, and how that sum becomes the result type.

The reference interpreter (``hlort.interpreter.ops.linalg``) converts both operands to one wide
accumulation type (f32 for f8/f16/bf16/f32, f64 when any of lhs, rhs, result is f64, c64/c128
for complex, int64 for pred and integers, float for integers into a float result), sums there
and converts once to the result type; integer sums wrap modulo 2^64 and the final conversion
keeps the low bits. The CPU plugin sums in
the same type, with one exception that only changes speed: an integer contraction whose every
partial sum provably fits a float's significand (``K * max|lhs| * max|rhs| <= 2^24`` for f32,
``2^53`` for f64, known from the element types at compile time) runs through float BLAS, where
every product and every partial sum is an exact integer whatever the summation order, so the
result is bit-identical to the int64 sum. Wider integer contractions use NumPy's int64 matmul,
which wraps exactly as the interpreter does.

Real float sums differ from the interpreter only in order (BLAS blocks and fuses multiply-adds),
so results agree within the usual dot-product error bound ``~K * eps(acc) * sum |a_k b_k|``;
after rounding to f16/bf16 they agree to within one unit of the result type on top of that.
Complex contractions of at most ``ORDERED_COMPLEX_MAX_K`` products per element (and
``ORDERED_COMPLEX_MAX_PRODUCTS`` in all) are summed in XLA's order instead, bit-identical to the
interpreter (:mod:`hlort_cpu.ordered_complex_matmul`); longer ones use complex BLAS, and the
elements BLAS leaves non-finite (its ``alpha = 1 + 0i`` scaling turns an infinite sum into
``NaN + NaN i``) are computed again from real gemms, and -0.0 parts made +0
(:meth:`ContractionArithmetic.repair`), so NaN, infinities and zero signs come out as the
interpreter's on every path. Real BLAS needs no such step: inf *
0, inf - inf and NaN propagate as in the interpreter, and every zero sum is +0 there as in the
interpreter's sum from a +0 accumulator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hlort.dtypes import DType
from hlort.interpreter.ops.complex_specials import (
    SCAN_MAX_PARTS,
    all_finite_after_plus_zero,
    repair_specials,
)
from hlort.interpreter.ops.linalg import accumulation_dtype
from hlort_cpu import blas_threads
from hlort_cpu.ordered_complex_matmul import complex_matmul_in_order

_F32_EXACT = 1 << 24
_F64_EXACT = 1 << 53
ORDERED_COMPLEX_MAX_K = 64
ORDERED_COMPLEX_MAX_PRODUCTS = 1 << 24


def largest_magnitude(dtype: DType) -> int | None:
    """max |x| over the values of an integer or pred type; None for float/complex types."""
    if dtype.is_pred:
        return 1
    if dtype.is_signed_integer:
        return 1 << (dtype.bits - 1)
    if dtype.is_unsigned_integer:
        return (1 << dtype.bits) - 1
    return None


@dataclass(frozen=True)
class ContractionArithmetic:
    """``compute``: the NumPy type the operands are converted to and multiplied in.
    ``accumulation``: the interpreter's accumulation type. ``result``: the declared type.
    ``bound``: for integer contractions, a bound on |every partial sum| (None: unbounded).
    ``ordered``: complex, summed in XLA's order rather than by BLAS."""

    compute: np.dtype
    accumulation: np.dtype
    result: DType
    bound: int | None = None
    ordered: bool = False

    @property
    def integer_via_float(self) -> bool:
        return self.accumulation.kind == "i" and self.compute.kind == "f"

    @property
    def needs_finish(self) -> bool:
        """Whether the matmul's output must still be converted to the result type."""
        return self.compute != self.result.numpy or self.result.is_pred

    @property
    def label(self) -> str:
        if self.ordered:
            return "complex, in order"
        if self.compute.kind == "i":
            return "int64 matmul"
        if self.integer_via_float:
            return f"BLAS {self.compute.name}, exact integers"
        return "BLAS"

    def matmul(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``a @ b`` in the compute type (into ``out`` when given)."""
        if self.ordered:
            return complex_matmul_in_order(a, b, out)
        out = np.matmul(a, b, out=out)
        self.repair(a, b, out)
        return out

    def repair(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        """After a complex BLAS product ``out = a @ b``: the elements it left non-finite
        computed again, -0.0 parts made +0, as the interpreter has them (complex gemm makes an
        infinite sum NaN, see ``hlort.interpreter.ops.complex_specials``). One pass over the
        result when all is finite; nothing for real types (their BLAS agrees already)."""
        if self.compute.kind != "c" or self.ordered:
            return
        if 2 * out.size <= SCAN_MAX_PARTS and all_finite_after_plus_zero(out):
            return  # a small finite result: no BLAS call, so no thread setting (~1 us)
        with blas_threads.single_threaded():  # its dot and gemms too (blas_threads.py)
            repair_specials(a, b, out)

    def finish(self, summed: np.ndarray) -> np.ndarray:
        """The summed products (in ``compute``) as a C-ordered array of the result type."""
        result = self.result
        if result.is_pred:
            return np.asarray(summed != 0, order="C")
        if self.integer_via_float and not self._exact_in_result():
            summed = summed.astype(np.int64)  # exact; the interpreter converts from int64
        with np.errstate(over="ignore", invalid="ignore"):
            return summed.astype(result.numpy, order="C")

    def _exact_in_result(self) -> bool:
        """Whether every possible sum converts from ``compute`` to the result type exactly."""
        result = self.result
        if result.name in ("f32", "f64"):
            return result.numpy.itemsize >= self.compute.itemsize
        return result.is_signed_integer and self.bound < (1 << (result.bits - 1))


def plan_arithmetic(
    lhs: DType, rhs: DType, result: DType, k: int, outputs: int
) -> ContractionArithmetic:
    """The arithmetic of ``outputs`` sums of ``k`` products of ``lhs`` x ``rhs`` each, into
    ``result`` (see the module docstring)."""
    acc = accumulation_dtype(lhs, rhs, result)
    compute = acc
    bound = None
    if acc.kind == "i":
        a, b = largest_magnitude(lhs), largest_magnitude(rhs)
        bound = max(k, 1) * a * b if a is not None and b is not None else None
        if bound is not None and bound <= _F32_EXACT:
            compute = np.dtype(np.float32)
        elif bound is not None and bound <= _F64_EXACT:
            compute = np.dtype(np.float64)
    ordered = (
        acc.kind == "c"
        and k <= ORDERED_COMPLEX_MAX_K
        and (k * outputs <= ORDERED_COMPLEX_MAX_PRODUCTS)
    )
    return ContractionArithmetic(np.dtype(compute), np.dtype(acc), result, bound, ordered)
