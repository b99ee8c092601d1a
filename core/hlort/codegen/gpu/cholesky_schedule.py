"""Cholesky on the GPU: one block per matrix, column by column as the interpreter, in f64.

The interpreter's factorization (hlort.interpreter.ops.linalg.cholesky_lower_with_info) goes
left to right: column ``j``'s pivot is ``a[j, j] - sum_k L[j, k]^2`` over ``k < j``; its
diagonal is ``sqrt(pivot)``, NaN when the pivot is not strictly positive (or NaN); the entries
below are ``(a[i, j] - sum_k L[i, k] L[j, k]) / L[j, j]``. Here thread 0 computes the pivot,
a barrier publishes it, the block's threads compute the entries below (one row each, strided),
and a barrier ends the column. A matrix with a NaN diagonal (a pivot that failed: LAPACK's
``info`` != 0) is all NaN, as JAX makes it. ``lower`` False factors ``a = U^T U`` as the
transpose of the lower factor of ``a^T``, so only the named triangle is read, and the other
triangle of the result is zero.

Sums run in ascending ``k`` from +0, each product rounded (no FMA); the interpreter's NumPy sums
pair their terms their own way, so results agree to a rounding of each sum in f64, rounded
once to the result type. The factor lives in an f64 scratch (in the output itself when the
result is f64 and lower). Complex Cholesky stays a host fallback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.conversions import convert_real
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import F64, I64, load_element, store_element
from hlort.codegen.llvm.loops import emit_loop
from hlort.dtypes import DType
from hlort.ir.instruction import Instruction

MAX_THREADS = 256
BOOL = ir.IntType(1)
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class CholeskyPlan:
    batch: int
    n: int
    lower: bool
    dtype: DType

    @property
    def threads(self) -> int:
        """A warp at least, one thread per row up to MAX_THREADS."""
        return min(MAX_THREADS, max(32, 1 << max(0, self.n - 1).bit_length()))

    @property
    def scratch_bytes(self) -> int:
        """An f64 factor, unless the output holds it (an f64 lower factor)."""
        if self.dtype is dtypes.F64 and self.lower:
            return 0
        return max(1, self.batch * self.n * self.n) * 8


def plan_cholesky(instr: Instruction) -> tuple[CholeskyPlan | None, str]:
    (a,) = (o.shape for o in instr.operands)
    out = instr.shape
    if not (a.is_array and out.is_array):
        return None, "its operand or result is not an array"
    if not out.dtype.is_float or out.dtype.is_complex:
        return None, f"no GPU Cholesky kernel for {out.dtype} (complex Cholesky falls back)"
    n = out.dims[-1]
    plan = CholeskyPlan(math.prod(out.dims[:-2]), n, bool(instr.attrs.get("lower", False)), a.dtype)
    return plan, ""


def emit_cholesky_kernel(target: GpuTarget, entry: KernelEntry, plan: CholeskyPlan) -> LaunchShape:
    """Arguments: a, result, then the f64 factor scratch when ``plan.scratch_bytes``."""
    a, out = entry.buffers[:2]
    factor = entry.buffers[2] if plan.scratch_bytes else out
    b, ctx = entry.builder, entry.ctx
    n, threads = plan.n, plan.threads
    launch = LaunchShape(max(1, min(MAX_BLOCKS, plan.batch)), threads)
    tid = b.zext(target.thread_index(b), I64)
    bid = b.zext(target.block_index(b), I64) if launch.blocks > 1 else i64(0)
    acc = ctx.alloca(F64)
    zero = ir.Constant(F64, 0.0)
    nan = ir.Constant(F64, math.nan)

    def matrix(m: ir.Value) -> None:
        base = b.mul(m, i64(n * n))

        def at(i: ir.Value, j: ir.Value) -> ir.Value:
            return b.add(base, b.add(b.mul(i, i64(n)), j))

        def a_entry(i: ir.Value, j: ir.Value) -> ir.Value:
            """Entry (i, j) of the lower triangle read: a's, or a^T's for an upper factor."""
            where = at(i, j) if plan.lower else at(j, i)
            return convert_real(ctx, load_element(b, plan.dtype, a, where), plan.dtype, dtypes.F64)

        def l_entry(i: ir.Value, k: ir.Value) -> ir.Value:
            return load_element(b, dtypes.F64, factor, at(i, k))

        def dot_rows(i: ir.Value, j: ir.Value) -> ir.Value:
            """sum over k < j of L[i, k] L[j, k], ascending, from +0."""
            b.store(zero, acc)

            def term(k: ir.Value) -> None:
                b.store(b.fadd(b.load(acc, typ=F64), b.fmul(l_entry(i, k), l_entry(j, k))), acc)

            emit_loop(b, i64(0), j, term, "k")
            return b.load(acc, typ=F64)

        def clear(t: ir.Value) -> None:  # the strict upper triangle of the factor is zero
            i, j = b.udiv(t, i64(n)), b.urem(t, i64(n))
            with b.if_then(b.icmp_unsigned("<", i, j)):
                store_element(b, dtypes.F64, zero, factor, at(i, j))

        _grid_stride(b, tid, i64(n * n), i64(threads), clear, "clear")

        def column(j: ir.Value) -> None:
            with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
                pivot = b.fsub(a_entry(j, j), dot_rows(j, j))
                ok = b.fcmp_ordered(">", pivot, zero)
                root = ctx.intrinsic("sqrt", b.select(ok, pivot, nan))
                store_element(b, dtypes.F64, root, factor, at(j, j))
            target.barrier(b)
            diag = l_entry(j, j)

            def below(i: ir.Value) -> None:
                value = b.fdiv(b.fsub(a_entry(i, j), dot_rows(i, j)), diag)
                store_element(b, dtypes.F64, value, factor, at(i, j))

            _grid_stride(b, b.add(b.add(j, i64(1)), tid), i64(n), i64(threads), below, "below")
            target.barrier(b)

        emit_loop(b, i64(0), i64(n), column, "column")
        failed = ctx.alloca(BOOL)
        b.store(ir.Constant(BOOL, 0), failed)

        def check(j: ir.Value) -> None:
            d = l_entry(j, j)
            b.store(b.or_(b.load(failed, typ=BOOL), b.fcmp_unordered("uno", d, d)), failed)

        emit_loop(b, i64(0), i64(n), check, "check")
        is_failed = b.load(failed, typ=BOOL)

        def write(t: ir.Value) -> None:
            i, j = b.udiv(t, i64(n)), b.urem(t, i64(n))
            value = b.select(is_failed, nan, l_entry(i, j))
            where = at(i, j) if plan.lower else at(j, i)
            store_element(
                b, plan.dtype, convert_real(ctx, value, dtypes.F64, plan.dtype), out, where
            )

        if plan.scratch_bytes:
            _grid_stride(b, tid, i64(n * n), i64(threads), write, "write")
        else:  # the factor is the output: only a failed matrix is rewritten
            with b.if_then(is_failed):
                _grid_stride(b, tid, i64(n * n), i64(threads), write, "write")
        target.barrier(b)  # the next matrix of this block starts after every write

    if plan.batch and n:
        _grid_stride(b, bid, i64(plan.batch), i64(launch.blocks), matrix, "matrices")
    b.ret_void()
    return launch


__all__ = ["CholeskyPlan", "emit_cholesky_kernel", "plan_cholesky"]
