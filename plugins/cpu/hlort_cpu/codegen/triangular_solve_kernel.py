"""Triangular-solve kernels: forward or back substitution, vectorized over the right-hand sides.

The kernel solves ``T X = B`` in place (``X`` holds ``B`` on entry) for a batch of triangular
``T`` [batch, n, n] and ``X`` [batch, n, m], both C-ordered f64 or c128 ({re, im} pairs of
doubles). Callers reduce every form of triangular-solve (right side, transposed or adjoint
``a``, upper or lower) to this one by views of the operands, and compute narrow types in f64 /
c128 as the reference interpreter does (``hlort.interpreter.ops.linalg``).

Row ``i`` (ascending for a lower ``T``, descending for an upper one) is
``x[i, :] = (x[i, :] - sum_k T[i, k] x[k, :]) / T[i, i]`` over the solved rows ``k`` (below ``i``
when lower, above when upper) in ascending ``k``, each product rounded and added to an
accumulator that starts at +0: the interpreter's order, so results usually agree bit for bit
(NumPy's einsum sometimes pairs its partial sums differently; the difference is then a rounding
of the sum). Only the named triangle and the diagonal of ``T`` are read; ``unit`` reads 1 for the
diagonal. Division is IEEE (a zero pivot gives inf / NaN); a complex quotient is NumPy's (Smith's
algorithm, the interpreter's ``/``), step for step. No fast-math flags: no FMA contraction.

``void k(ptr* buffers, i64 begin, i64 end)``: buffers = T, X, dims (i64 n, m, unit). Outer
iteration ``u`` in [0, batch * ceil(m / COLUMN_BLOCK)) solves one column block of one matrix, so
threads take disjoint (matrix, block) pairs. A block's accumulators live on the stack (L1).
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.llvm_types import F64, I64
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort_cpu.codegen import code_settings

COLUMN_BLOCK = 64
code_settings.declare(__name__, "COLUMN_BLOCK")
"""Right-hand sides solved side by side per outer iteration (their accumulators: 1 KiB, c128)."""


def _f(v: float) -> ir.Constant:
    return ir.Constant(F64, v)


class _Substitution:
    def __init__(
        self, module: ir.Module, target: TargetSpec, name: str, is_complex: bool, lower: bool
    ):
        self.parts = 2 if is_complex else 1
        self.lower = lower
        kernel = define_kernel(module, target, name, 3)
        self.b = b = kernel.builder
        begin, end = kernel.begin, kernel.end
        self.t, self.x, dims = kernel.buffers
        self.n, self.m, unit = (
            b.load(b.gep(dims, [i64(k)], inbounds=True, source_etype=I64), typ=I64)
            for k in range(3)
        )
        self.unit = b.icmp_signed("!=", unit, i64(0))
        self.acc = [
            b.alloca(ir.ArrayType(F64, COLUMN_BLOCK), name=f"acc{p}") for p in range(self.parts)
        ]
        self.blocks = b.udiv(b.add(self.m, i64(COLUMN_BLOCK - 1)), i64(COLUMN_BLOCK))
        emit_loop(b, begin, end, self._block, "block")
        b.ret_void()

    # -- memory ----------------------------------------------------------------------------------
    def _load(self, base: ir.Value, element: ir.Value) -> list[ir.Value]:
        b = self.b
        first = b.mul(element, i64(self.parts))
        return [
            b.load(b.gep(base, [b.add(first, i64(p))], inbounds=True, source_etype=F64), typ=F64)
            for p in range(self.parts)
        ]

    def _store(self, base: ir.Value, element: ir.Value, values: list[ir.Value]) -> None:
        b = self.b
        first = b.mul(element, i64(self.parts))
        for p, v in enumerate(values):
            b.store(v, b.gep(base, [b.add(first, i64(p))], inbounds=True, source_etype=F64))

    def _acc(self, p: int, j: ir.Value) -> ir.Value:
        return self.b.gep(self.acc[p], [i64(0), j], inbounds=True)

    # -- the algorithm ---------------------------------------------------------------------------
    def _block(self, u: ir.Value) -> None:
        b = self.b
        matrix, block = b.udiv(u, self.blocks), b.urem(u, self.blocks)
        j0 = b.mul(block, i64(COLUMN_BLOCK))
        rest = b.sub(self.m, j0)
        width = b.select(b.icmp_signed("<", rest, i64(COLUMN_BLOCK)), rest, i64(COLUMN_BLOCK))
        self.width = width
        self.t0 = b.mul(matrix, b.mul(self.n, self.n))
        self.x0 = b.add(b.mul(matrix, b.mul(self.n, self.m)), j0)
        emit_loop(b, i64(0), self.n, self._row, "row")

    def _row(self, r: ir.Value) -> None:
        b = self.b
        i = r if self.lower else b.sub(b.sub(self.n, i64(1)), r)
        for p in range(self.parts):
            emit_loop(
                b, i64(0), self.width, lambda j, p=p: b.store(_f(0.0), self._acc(p, j)), "zero"
            )
        t_row = b.add(self.t0, b.mul(i, self.n))
        known = (i64(0), i) if self.lower else (b.add(i, i64(1)), self.n)
        emit_loop(b, *known, lambda k: self._accumulate(t_row, k), "known")
        pivot = self._load(self.t, b.add(t_row, i))
        one = [_f(1.0), _f(0.0)][: self.parts]
        pivot = [b.select(self.unit, o, v) for o, v in zip(one, pivot, strict=True)]
        x_row = b.add(self.x0, b.mul(i, self.m))
        if self.parts == 1:
            self._finish_real(x_row, pivot[0])
        else:
            self._finish_complex(x_row, *pivot)

    def _accumulate(self, t_row: ir.Value, k: ir.Value) -> None:
        """acc[j] += T[i, k] * x[k, j] over the block's columns (the complex product naive)."""
        b = self.b
        t = self._load(self.t, b.add(t_row, k))
        x_row = b.add(self.x0, b.mul(k, self.m))

        def column(j: ir.Value) -> None:
            x = self._load(self.x, b.add(x_row, j))
            if self.parts == 1:
                terms = [b.fmul(t[0], x[0])]
            else:
                (tr, ti), (xr, xi) = t, x
                terms = [
                    b.fsub(b.fmul(tr, xr), b.fmul(ti, xi)),
                    b.fadd(b.fmul(tr, xi), b.fmul(ti, xr)),
                ]
            for p, term in enumerate(terms):
                slot = self._acc(p, j)
                b.store(b.fadd(b.load(slot, typ=F64), term), slot)

        emit_loop(b, i64(0), self.width, column, "column")

    def _finish_real(self, x_row: ir.Value, pivot: ir.Value) -> None:
        b = self.b

        def column(j: ir.Value) -> None:
            at = b.add(x_row, j)
            x = self._load(self.x, at)[0]
            partial = b.load(self._acc(0, j), typ=F64)
            self._store(self.x, at, [b.fdiv(b.fsub(x, partial), pivot)])

        emit_loop(b, i64(0), self.width, column, "finish")

    def _finish_complex(self, x_row: ir.Value, dr: ir.Value, di: ir.Value) -> None:
        """NumPy's complex quotient: Smith's algorithm, the larger part of the divisor first;
        a zero divisor divides each part by |re| (inf / NaN as IEEE says)."""
        b = self.b
        fabs = b.module.declare_intrinsic("llvm.fabs", [F64])
        dra, dia = b.call(fabs, [dr]), b.call(fabs, [di])
        real_first = b.fcmp_ordered(">=", dra, dia)
        zero = b.and_(b.fcmp_ordered("==", dra, _f(0.0)), b.fcmp_ordered("==", dia, _f(0.0)))
        rat_a = b.fdiv(di, dr)
        scl_a = b.fdiv(_f(1.0), b.fadd(dr, b.fmul(di, rat_a)))
        rat_b = b.fdiv(dr, di)
        scl_b = b.fdiv(_f(1.0), b.fadd(di, b.fmul(dr, rat_b)))

        def column(j: ir.Value) -> None:
            at = b.add(x_row, j)
            xr, xi = self._load(self.x, at)
            ar = b.fsub(xr, b.load(self._acc(0, j), typ=F64))
            ai = b.fsub(xi, b.load(self._acc(1, j), typ=F64))
            re_a = b.select(zero, b.fdiv(ar, dra), b.fmul(b.fadd(ar, b.fmul(ai, rat_a)), scl_a))
            im_a = b.select(zero, b.fdiv(ai, dra), b.fmul(b.fsub(ai, b.fmul(ar, rat_a)), scl_a))
            re_b = b.fmul(b.fadd(b.fmul(ar, rat_b), ai), scl_b)
            im_b = b.fmul(b.fsub(b.fmul(ai, rat_b), ar), scl_b)
            self._store(
                self.x, at, [b.select(real_first, re_a, re_b), b.select(real_first, im_a, im_b)]
            )

        emit_loop(b, i64(0), self.width, column, "finish")


def emit_triangular_substitution(
    module: ir.Module, target: TargetSpec, name: str, is_complex: bool, lower: bool
) -> None:
    """Add kernel ``name`` (see the module docstring) to ``module``: f64 or c128 (``is_complex``),
    forward substitution for a lower ``T`` or back substitution for an upper one."""
    _Substitution(module, target, name, is_complex, lower)
