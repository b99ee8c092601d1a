"""Triangular-solve on the GPU: one thread per right-hand side, substituting in f64 or c128.

Every form reduces to ``M x = b`` for each independent vector ``b`` (the CPU plugin's
triangular_solve.py does the same with views): with ``left_side`` a vector is a column of ``b``
and ``M = op(a)``; otherwise (``x op(a) = b``, i.e. ``op(a)^T x^T = b^T``) a vector is a row of
``b`` and ``M = op(a)^T``. ``op`` is the identity, the transpose or the adjoint
(``transpose_a``; the adjoint of a real matrix is its transpose). So ``M[i, k]`` is ``a[i, k]``,
or ``a[k, i]`` when exactly one of "transposed" and "right side" holds, conjugated for an
adjoint, and ``M`` is lower when ``lower`` differs from that swap. No operand is copied: the
kernel reads ``a`` and ``b`` where they are.

The arithmetic is the interpreter's (hlort.interpreter.ops.linalg): f64 for every real element
type, c128 for c64 and c128 with NumPy's complex products and division (linalg_arith.py), row
``i`` in substitution order is ``x[i] = (b[i] - sum_k M[i, k] x[k]) / M[i, i]`` with the sum
over the solved rows in ascending ``k``, each product rounded and added to an accumulator that
starts at +0 (no FMA contraction: the kernels carry no fast-math flags); only the named triangle
and the diagonal of ``a`` are read, and not the diagonal when ``unit_diagonal``; a zero pivot
gives inf / NaN as IEEE division does; each solution element is rounded once to the result type.
Results therefore usually agree with the interpreter bit for bit (its einsum may pair partial
sums differently: then they differ by a rounding of a sum). Solved f64 (c128) values stay in a
scratch buffer of that type (the output itself when the result is f64 or c128). A unit diagonal
divides by 1 (1 + 0i), as the interpreter does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.linalg_arith import LinalgArith
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.loops import emit_loop
from hlort.dtypes import DType
from hlort.ir.attributes import Transpose
from hlort.ir.instruction import Instruction

BLOCK = 128
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class TriangularPlan:
    """``batch`` systems of size ``n``, each with ``vectors`` right-hand sides."""

    batch: int
    n: int
    vectors: int
    left: bool
    lower: bool  # M is lower triangular: forward substitution
    swap: bool  # M[i, k] = a[k, i]
    unit: bool
    a_dtype: DType
    b_dtype: DType
    out_dtype: DType
    conjugate: bool = False  # M[i, k] is conjugated (the adjoint of a complex matrix)

    @property
    def scratch_bytes(self) -> int:
        """An f64 (c128) copy of the solution, unless the output already is one."""
        if self.out_dtype in (dtypes.F64, dtypes.C128):
            return 0
        return max(1, self.batch * self.n * self.vectors) * (16 if self.is_complex else 8)

    @property
    def is_complex(self) -> bool:
        return self.out_dtype.is_complex


def plan_triangular_solve(instr: Instruction) -> tuple[TriangularPlan | None, str]:
    a, b = (o.shape for o in instr.operands)
    out = instr.shape
    if not (a.is_array and b.is_array and out.is_array):
        return None, "its operands or result are not arrays"
    kinds = {s.dtype.is_complex for s in (a, b, out)}
    if not all(s.dtype.is_float or s.dtype.is_complex for s in (a, b, out)) or len(kinds) > 1:
        return None, (
            f"no GPU substitution kernel for {a.dtype} x {b.dtype} -> {out.dtype} (all real "
            f"floats or all complex)"
        )
    attrs = instr.attrs
    left = bool(attrs.get("left_side", False))
    how = attrs.get("transpose_a", Transpose.NO_TRANSPOSE)
    transposed = how is not Transpose.NO_TRANSPOSE
    swap = transposed != (not left)
    n = out.dims[-2] if left else out.dims[-1]
    vectors = out.dims[-1] if left else out.dims[-2]
    plan = TriangularPlan(
        math.prod(out.dims[:-2]),
        n,
        vectors,
        left,
        bool(attrs.get("lower", False)) != swap,
        swap,
        bool(attrs.get("unit_diagonal", False)),
        a.dtype,
        b.dtype,
        out.dtype,
        how is Transpose.ADJOINT and out.dtype.is_complex,
    )
    return plan, ""


def emit_triangular_kernel(
    target: GpuTarget, entry: KernelEntry, plan: TriangularPlan
) -> LaunchShape:
    """Arguments: a, b, result, then the f64 (c128) scratch when ``plan.scratch_bytes``."""
    a, rhs, out = entry.buffers[:3]
    xs = entry.buffers[3] if plan.scratch_bytes else out
    b, ctx = entry.builder, entry.ctx
    n, vectors = plan.n, plan.vectors
    work = plan.batch * vectors
    launch = LaunchShape.for_elements(max(work, 1), BLOCK, MAX_BLOCKS)
    wide = LinalgArith(ctx, plan.is_complex)
    acc = ctx.alloca(wide.type)

    def system(t: ir.Value) -> None:
        matrix, v = b.udiv(t, i64(vectors)), b.urem(t, i64(vectors))
        a0 = b.mul(matrix, i64(n * n))
        b0 = b.mul(matrix, i64(n * vectors))

        def element(i: ir.Value) -> ir.Value:
            """Where the vector's element ``i`` is in b, x and the result."""
            if plan.left:  # a column: b[matrix, i, v]
                return b.add(b0, b.add(b.mul(i, i64(vectors)), v))
            return b.add(b0, b.add(b.mul(v, i64(n)), i))  # a row: b[matrix, v, i]

        def m_entry(i: ir.Value, k: ir.Value) -> ir.Value:
            row, col = (k, i) if plan.swap else (i, k)
            value = wide.load(plan.a_dtype, a, b.add(a0, b.add(b.mul(row, i64(n)), col)))
            return wide.conj(value) if plan.conjugate else value

        def x_at(k: ir.Value) -> ir.Value:
            return wide.load(wide.dtype, xs, element(k))

        def row(r: ir.Value) -> None:
            i = r if plan.lower else b.sub(i64(n - 1), r)
            b.store(wide.zero, acc)

            def known(k: ir.Value) -> None:
                product = wide.mul(m_entry(i, k), x_at(k))
                b.store(wide.add(b.load(acc, typ=wide.type), product), acc)

            bounds = (i64(0), i) if plan.lower else (b.add(i, i64(1)), i64(n))
            emit_loop(b, *bounds, known, "known")
            at = element(i)
            value = wide.load(plan.b_dtype, rhs, at)
            pivot = wide.one if plan.unit else m_entry(i, i)
            x = wide.div(wide.sub(value, b.load(acc, typ=wide.type)), pivot)
            wide.store(wide.dtype, x, xs, at)
            if plan.scratch_bytes:
                wide.store(plan.out_dtype, x, out, at)

        emit_loop(b, i64(0), i64(n), row, "row")

    if work and n:
        start = grid_stride_start(target, b, launch)
        _grid_stride(b, start, i64(work), i64(launch.threads), system, "systems")
    b.ret_void()
    return launch


__all__ = ["TriangularPlan", "emit_triangular_kernel", "plan_triangular_solve"]
