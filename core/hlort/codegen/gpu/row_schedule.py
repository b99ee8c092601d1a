"""The row-reduction schedule: one block per row, producers in registers, warps combined.

For a row fusion (row_fusion.plan_row_fusion: softmax, layernorm, ``reduce_sum(x + y*z)`` over
trailing dimensions, with their row-level and element-level epilogues), block ``r`` handles row
``r`` (and ``r + G``, ... when there are more rows than blocks). Each thread folds elements
``t, t + B, ...`` of the row in registers, computing the reduce's inputs from the fusion's
parameters on the fly (one global load per parameter element, nothing written back); the
block's partials are then combined by warp shuffles and shared memory (block_reduce.py) and the
reducer is applied to the init value once. Row-level outputs are written by thread 0, element
level outputs (softmax's) by every thread in a second sweep over the row. Reductions with
several reduces (softmax: max, then sum) run them in dependence order inside the same kernel.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.gpu.block_reduce import ALL_VALID, block_combine
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I64, round_to, store_element, value_type
from hlort.codegen.llvm.row_fusion import RowEmitter, RowPlan, apply_reducer
from hlort.ir.computation import Computation

MIN_BLOCK_ROW = 32  # shorter rows: one thread per row (reduce_emitter.py) wastes less


def block_size(target: GpuTarget, row_size: int) -> int:
    """A power of two between the warp size and 512, about a quarter of the row."""
    want = max(target.warp_size, 1 << max(0, (max(1, row_size // 4) - 1).bit_length()))
    return min(want, 512, target.max_threads_per_block)


def emit_row_kernel(
    target: GpuTarget, entry: KernelEntry, comp: Computation, plan: RowPlan
) -> LaunchShape:
    nparams = len(comp.parameters)
    params, outs = list(entry.buffers[:nparams]), list(entry.buffers[nparams:])
    in_dims, kept = plan.in_dims, plan.kept_dims
    row_size = math.prod(in_dims[d] for d in plan.reduced)
    rows = math.prod(kept) if kept else 1
    if math.prod(in_dims) == 0 and row_size != 0:
        rows = 0
    threads = block_size(target, row_size)
    launch = LaunchShape(max(1, min(rows, target.max_grid_blocks)), threads)
    b, ctx = entry.builder, entry.ctx
    em = RowEmitter(ctx, comp, params, plan.row_level)
    tid = b.zext(target.thread_index(b), I64)
    slots = {}
    for r in plan.reduces:
        n = len(r.operands) // 2
        types = [value_type(o.shape.dtype) for o in r.operands[:n]]
        slots[r] = (types, [ctx.alloca(t) for t in types])

    def outer(o: ir.Value) -> None:
        kept_multi = delinearize(b, o, kept)
        em.start_row(o, kept_multi, kept)

        def element_index(j: ir.Value) -> Index:
            multi = kept_multi + [j] if len(plan.reduced) == 1 else None
            return Index(b, in_dims, multi=multi, linear=b.add(b.mul(o, i64(row_size)), j))

        for r in plan.reduces:
            _reduce_row(ctx, target, em, r, slots[r], tid, row_size, threads, element_index)
        element_outs = []
        for k, out in enumerate(plan.outputs):
            if out.shape.dims == in_dims and in_dims != kept:
                element_outs.append(k)
                continue
            with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
                value = em.value(out, em.row_index(out.shape.dims))
                store_element(b, out.shape.dtype, value, outs[k], o)
            em.reset()
        if element_outs:

            def write(j: ir.Value) -> None:
                index = element_index(j)
                for k in element_outs:
                    out = plan.outputs[k]
                    store_element(b, out.shape.dtype, em.value(out, index), outs[k], index.linear)
                em.reset()

            _grid_stride(b, tid, i64(row_size), i64(threads), write, "write")
            em.reset()

    if rows:
        start = b.zext(target.block_index(b), I64) if launch.blocks > 1 else i64(0)
        _grid_stride(b, start, i64(rows), i64(launch.blocks), outer, "rows")
    b.ret_void()
    return launch


def _reduce_row(
    ctx: IrContext,
    target: GpuTarget,
    em: RowEmitter,
    r,
    slots,
    tid: ir.Value,
    row_size: int,
    threads: int,
    element_index,
) -> None:
    """Fold this row's elements of reduce ``r``; its result goes to ``em.row_values``."""
    b = ctx.b
    types, allocas = slots
    n = len(r.operands) // 2
    seen = b.icmp_unsigned("<", tid, i64(row_size))
    with b.if_then(seen):
        first = element_index(tid)
        for a, x in zip(allocas, r.operands[:n], strict=True):
            b.store(em.value(x, first), a)
        em.reset()

        def step(j: ir.Value) -> None:
            accs = [b.load(a, typ=t) for a, t in zip(allocas, types, strict=True)]
            values = [em.value(x, element_index(j)) for x in r.operands[:n]]
            for a, v in zip(allocas, apply_reducer(ctx, r, accs, values), strict=True):
                b.store(v, a)
            em.reset()

        _grid_stride(b, b.add(tid, i64(threads)), i64(row_size), i64(threads), step, "fold")
    em.reset()
    partial = [b.load(a, typ=t) for a, t in zip(allocas, types, strict=True)]

    def combine(left, right):
        return apply_reducer(ctx, r, left, right)

    every = ALL_VALID if row_size >= threads else seen
    total, valid = block_combine(ctx, target, threads, partial, every, combine, r.name)
    scalar = Index.scalar(b)
    inits = [em.value(x, scalar) for x in r.operands[n:]]
    folded = apply_reducer(ctx, r, inits, total)
    result = (
        folded
        if valid is ALL_VALID
        else [b.select(valid, f, i) for f, i in zip(folded, inits, strict=True)]
    )
    em.row_values[r] = [
        round_to(b, x.shape.dtype, v) for v, x in zip(result, r.operands[:n], strict=True)
    ]


__all__ = ["block_size", "emit_row_kernel", "MIN_BLOCK_ROW"]
