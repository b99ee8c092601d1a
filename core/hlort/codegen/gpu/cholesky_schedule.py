"""Cholesky on the GPU: one block per matrix, column by column as the interpreter, in f64/c128.

The interpreter's factorization (hlort.interpreter.ops.linalg.cholesky_lower_with_info) goes
left to right: column ``j``'s pivot is ``re a[j, j] - sum_k re(L[j, k] conj L[j, k])`` over ``k
< j``; its diagonal is ``sqrt(pivot)``, NaN when the pivot is not strictly positive (or NaN);
the entries below are ``(a[i, j] - sum_k L[i, k] conj L[j, k]) / L[j, j]``. Here thread 0
computes the pivot, a barrier publishes it, the block's threads compute the entries below (one
row each, strided), and a barrier ends the column. A matrix with a NaN diagonal (a pivot that
failed: LAPACK's ``info`` != 0) is all NaN (NaN + 0i), as JAX makes it. ``lower`` False factors
``a = U^H U`` as the adjoint of the lower factor of ``a^H``, so only the named triangle is read,
and the other triangle of the result is zero (``-0i`` parts for a complex upper factor, as the
interpreter's ``conj`` leaves them).

Sums run in ascending ``k`` from +0, each product rounded (no FMA); complex products and the
division by the diagonal are NumPy's (linalg_arith.py); the interpreter's NumPy sums pair their
terms their own way, so results agree to a rounding of each sum in f64, rounded once to the
result type. The factor lives in an f64 (c128) scratch, in the output itself when the result is
f64 (c128) and lower.

JAX's ``lapack_?potrf_ffi`` (``CholeskyPlan.lapack``) is the same factorization with LAPACK's
outputs, as the interpreter's ``lapack_reference.potrf`` defines them: the other triangle of
the result is the operand's (as LAPACK leaves it; the named triangle alone is NaN when the
matrix failed), and a second output ``info`` (s32, one per matrix) is 0, or the 1-based column
whose pivot was not strictly positive (or NaN): the first NaN diagonal, since every later pivot
of a failed matrix is NaN too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.linalg_arith import LinalgArith
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import F64, I32, I64
from hlort.codegen.llvm.loops import emit_loop
from hlort.dtypes import DType
from hlort.ir.instruction import Instruction

MAX_THREADS = 256
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class CholeskyPlan:
    batch: int
    n: int
    lower: bool
    dtype: DType
    lapack: bool = False  # potrf: an info output, the other triangle kept from the operand

    @property
    def threads(self) -> int:
        """A warp at least, one thread per row up to MAX_THREADS."""
        return min(MAX_THREADS, max(32, 1 << max(0, self.n - 1).bit_length()))

    @property
    def scratch_bytes(self) -> int:
        """An f64 (c128) factor, unless the output holds it (an f64 or c128 lower factor)."""
        if self.dtype in (dtypes.F64, dtypes.C128) and self.lower:
            return 0
        return max(1, self.batch * self.n * self.n) * (16 if self.dtype.is_complex else 8)


def plan_cholesky(instr: Instruction) -> tuple[CholeskyPlan | None, str]:
    (a,) = (o.shape for o in instr.operands)
    out = instr.shape
    if not (a.is_array and out.is_array):
        return None, "its operand or result is not an array"
    if not (out.dtype.is_float or out.dtype.is_complex) or a.dtype is not out.dtype:
        return None, f"no GPU Cholesky kernel for {a.dtype} -> {out.dtype}"
    n = out.dims[-1]
    plan = CholeskyPlan(math.prod(out.dims[:-2]), n, bool(instr.attrs.get("lower", False)), a.dtype)
    return plan, ""


def emit_cholesky_kernel(target: GpuTarget, entry: KernelEntry, plan: CholeskyPlan) -> LaunchShape:
    """Arguments: a, result, (potrf) info, then the f64 (c128) factor scratch when
    ``plan.scratch_bytes``."""
    a, out = entry.buffers[:2]
    info = entry.buffers[2] if plan.lapack else None
    factor = entry.buffers[2 + plan.lapack] if plan.scratch_bytes else out
    b, ctx = entry.builder, entry.ctx
    n, threads = plan.n, plan.threads
    launch = LaunchShape(max(1, min(MAX_BLOCKS, plan.batch)), threads)
    tid = b.zext(target.thread_index(b), I64)
    bid = b.zext(target.block_index(b), I64) if launch.blocks > 1 else i64(0)
    wide = LinalgArith(ctx, plan.dtype.is_complex)
    acc = ctx.alloca(wide.type)
    column_failed = ctx.alloca(I64)  # LAPACK's info: the first NaN diagonal's column + 1
    zero = ir.Constant(F64, 0.0)
    nan = ir.Constant(F64, math.nan)

    def matrix(m: ir.Value) -> None:
        base = b.mul(m, i64(n * n))

        def at(i: ir.Value, j: ir.Value) -> ir.Value:
            return b.add(base, b.add(b.mul(i, i64(n)), j))

        def a_entry(i: ir.Value, j: ir.Value) -> ir.Value:
            """Entry (i, j) of the lower triangle read: a's, or a^H's for an upper factor."""
            if plan.lower:
                return wide.load(plan.dtype, a, at(i, j))
            return wide.conj(wide.load(plan.dtype, a, at(j, i)))

        def l_entry(i: ir.Value, k: ir.Value) -> ir.Value:
            return wide.load(wide.dtype, factor, at(i, k))

        def dot_rows(i: ir.Value, j: ir.Value) -> ir.Value:
            """sum over k < j of L[i, k] conj L[j, k], ascending, from +0."""
            b.store(wide.zero, acc)

            def term(k: ir.Value) -> None:
                product = wide.mul(l_entry(i, k), wide.conj(l_entry(j, k)))
                b.store(wide.add(b.load(acc, typ=wide.type), product), acc)

            emit_loop(b, i64(0), j, term, "k")
            return b.load(acc, typ=wide.type)

        def clear(t: ir.Value) -> None:  # the strict upper triangle of the factor is zero
            i, j = b.udiv(t, i64(n)), b.urem(t, i64(n))
            with b.if_then(b.icmp_unsigned("<", i, j)):
                kept = plan.lapack and not plan.scratch_bytes  # the output: potrf keeps a's
                value = wide.load(plan.dtype, a, at(i, j)) if kept else wide.zero
                wide.store(wide.dtype, value, factor, at(i, j))

        _grid_stride(b, tid, i64(n * n), i64(threads), clear, "clear")

        def column(j: ir.Value) -> None:
            with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
                pivot = b.fsub(wide.real(a_entry(j, j)), wide.real(dot_rows(j, j)))
                ok = b.fcmp_ordered(">", pivot, zero)
                root = ctx.intrinsic("sqrt", b.select(ok, pivot, nan))
                wide.store(wide.dtype, wide.from_real(root), factor, at(j, j))
            target.barrier(b)
            diag = l_entry(j, j)

            def below(i: ir.Value) -> None:
                value = wide.div(wide.sub(a_entry(i, j), dot_rows(i, j)), diag)
                wide.store(wide.dtype, value, factor, at(i, j))

            _grid_stride(b, b.add(b.add(j, i64(1)), tid), i64(n), i64(threads), below, "below")
            target.barrier(b)

        emit_loop(b, i64(0), i64(n), column, "column")
        b.store(i64(0), column_failed)

        def failed() -> ir.Value:
            return b.load(column_failed, typ=I64)

        def check(j: ir.Value) -> None:
            d = wide.real(l_entry(j, j))
            first = b.and_(b.fcmp_unordered("uno", d, d), b.icmp_unsigned("==", failed(), i64(0)))
            b.store(b.select(first, b.add(j, i64(1)), failed()), column_failed)

        emit_loop(b, i64(0), i64(n), check, "check")
        if info is not None and not plan.scratch_bytes:  # read every diagonal before NaNs land
            target.barrier(b)
        is_failed = b.icmp_unsigned("!=", failed(), i64(0))
        if info is not None:
            with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
                b.store(b.trunc(failed(), I32), b.gep(info, [m], inbounds=True, source_etype=I32))

        def write(t: ir.Value) -> None:
            i, j = b.udiv(t, i64(n)), b.urem(t, i64(n))
            value = b.select(is_failed, wide.from_real(nan), l_entry(i, j))
            value = value if plan.lower else wide.conj(value)  # U = L^H
            where = at(i, j) if plan.lower else at(j, i)
            if plan.lapack:  # the other triangle is the operand's
                value = b.select(b.icmp_unsigned("<", i, j), wide.load(plan.dtype, a, where), value)
            wide.store(plan.dtype, value, out, where)

        if plan.scratch_bytes:
            _grid_stride(b, tid, i64(n * n), i64(threads), write, "write")
        else:  # the factor is the output: only a failed matrix is rewritten
            with b.if_then(is_failed):
                _grid_stride(b, tid, i64(n * n), i64(threads), write, "write")
        target.barrier(b)  # the next matrix of this block starts after every write

    if plan.batch and (n or plan.lapack):  # potrf writes info 0 for an empty matrix
        _grid_stride(b, bid, i64(plan.batch), i64(launch.blocks), matrix, "matrices")
    b.ret_void()
    return launch


__all__ = ["CholeskyPlan", "emit_cholesky_kernel", "plan_cholesky"]
