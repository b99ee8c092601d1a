"""The arithmetic of the GPU Cholesky and triangular-solve kernels: f64, or c128 for complex.

The interpreter (hlort.interpreter.ops.linalg) widens every element to f64 or c128 and computes
with NumPy, so the complex operations here are NumPy's own, step for step: a product is
``(ar br - ai bi) + (ar bi + ai br)i``; a quotient is NumPy's Smith division with a reciprocal
(``|br| >= |bi|``: ``rat = bi / br``, ``scl = 1 / (br + bi rat)``, ``((ar + ai rat) scl,
(ai - ar rat) scl)``; the mirror image otherwise; a zero divisor ``(ar / |br|, ai / |br|)``),
so a division by a real ``d + 0i`` (a Cholesky diagonal) multiplies by ``1 / d`` rather than
dividing each part by ``d`` (checked equal to NumPy 2.4 bit for bit on finite values, signed
zeros included). Real kernels get plain f64 operations, unchanged.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.gpu.contraction_arith import convert
from hlort.codegen.llvm.complex_types import make, parts
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F64, load_element, store_element, value_type
from hlort.dtypes import DType


class LinalgArith:
    """Wide (f64 or c128) values: loads and stores converting element types, and NumPy's ops."""

    def __init__(self, ctx: IrContext, is_complex: bool):
        self.ctx, self.b = ctx, ctx.b
        self.is_complex = is_complex
        self.dtype = dtypes.C128 if is_complex else dtypes.F64
        self.type = value_type(self.dtype)
        self.zero = self.from_real(ir.Constant(F64, 0.0))
        self.one = self.from_real(ir.Constant(F64, 1.0))

    @property
    def item_bytes(self) -> int:
        return 16 if self.is_complex else 8

    def load(self, dtype: DType, buffer: ir.Value, index: ir.Value) -> ir.Value:
        return convert(self.ctx, load_element(self.b, dtype, buffer, index), dtype, self.dtype)

    def store(self, dtype: DType, value: ir.Value, buffer: ir.Value, index: ir.Value) -> None:
        store_element(self.b, dtype, convert(self.ctx, value, self.dtype, dtype), buffer, index)

    def from_real(self, r: ir.Value) -> ir.Value:
        """``r + 0i`` (``r`` for real kernels)."""
        if not self.is_complex:
            return r
        if isinstance(r, ir.Constant):
            return ir.Constant(self.type, [r, ir.Constant(F64, 0.0)])
        return make(self.b, r, ir.Constant(F64, 0.0))

    def real(self, x: ir.Value) -> ir.Value:
        return self.b.extract_value(x, 0) if self.is_complex else x

    def conj(self, x: ir.Value) -> ir.Value:
        if not self.is_complex:
            return x
        re, im = parts(self.b, x)
        return make(self.b, re, self.b.fneg(im))

    def add(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self._parts(self.b.fadd, x, y)

    def sub(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self._parts(self.b.fsub, x, y)

    def _parts(self, op, x: ir.Value, y: ir.Value) -> ir.Value:
        if not self.is_complex:
            return op(x, y)
        (xr, xi), (yr, yi) = parts(self.b, x), parts(self.b, y)
        return make(self.b, op(xr, yr), op(xi, yi))

    def mul(self, x: ir.Value, y: ir.Value) -> ir.Value:
        b = self.b
        if not self.is_complex:
            return b.fmul(x, y)
        (xr, xi), (yr, yi) = parts(b, x), parts(b, y)
        return make(
            b, b.fsub(b.fmul(xr, yr), b.fmul(xi, yi)), b.fadd(b.fmul(xr, yi), b.fmul(xi, yr))
        )

    def div(self, x: ir.Value, y: ir.Value) -> ir.Value:
        """``x / y`` as NumPy divides (module docstring)."""
        b = self.b
        if not self.is_complex:
            return b.fdiv(x, y)
        (ar, ai), (br, bi) = parts(b, x), parts(b, y)
        mul, add, sub, div, sel = b.fmul, b.fadd, b.fsub, b.fdiv, b.select
        one = ir.Constant(F64, 1.0)
        br_abs, bi_abs = self.ctx.fabs(br), self.ctx.fabs(bi)
        rat = div(bi, br)
        scl = div(one, add(br, mul(bi, rat)))
        real_big = (mul(add(ar, mul(ai, rat)), scl), mul(sub(ai, mul(ar, rat)), scl))
        rat2 = div(br, bi)
        scl2 = div(one, add(bi, mul(br, rat2)))
        imag_big = (mul(add(mul(ar, rat2), ai), scl2), mul(sub(mul(ai, rat2), ar), scl2))
        zero = ir.Constant(F64, 0.0)
        both_zero = b.and_(b.fcmp_ordered("==", br_abs, zero), b.fcmp_ordered("==", bi_abs, zero))
        by_zero = (div(ar, br_abs), div(ai, br_abs))
        ge = b.fcmp_ordered(">=", br_abs, bi_abs)  # false with a NaN part: the mirror branch
        re = sel(ge, sel(both_zero, by_zero[0], real_big[0]), imag_big[0])
        im = sel(ge, sel(both_zero, by_zero[1], real_big[1]), imag_big[1])
        return make(b, re, im)


__all__ = ["LinalgArith"]
