"""Long rows in few of them (a full reduction, ``reduce_sum(x + y*z)`` to a scalar): one kernel,
several blocks per row, the last block to finish a row combining the others' partials.

With one block per row a full reduction would run on one multiprocessor. Here row ``r`` is cut
into ``S`` chunks, block ``(r, s)`` folds chunk ``s`` in registers (producers computed on the fly,
as in row_schedule.py), combines its threads by warp shuffles and shared memory and writes one
partial per reduce operand to a scratch buffer. It then counts itself done on the row's counter
(a fence, then an atomic add); the block that brings the count to ``S`` reads the row's ``S``
partials back (atomic loads: they bypass the incoherent L1), combines them in chunk order,
applies the reducer to the init value once, writes the row's outputs and puts the counter back to
zero, so the counter buffer (a constant slot of zeros) is ready for the next launch. Only the
partials touch global memory; nothing of the fused producers does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.gpu.block_reduce import block_combine
from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I64, round_to, store_element, value_type
from hlort.codegen.llvm.row_fusion import RowEmitter, RowPlan, apply_reducer

I8 = ir.IntType(8)
THREADS = 512
MIN_SPLIT_ROW = 1 << 15  # shorter rows: one block each is enough
MAX_ROWS = 64  # more rows than this keep the GPU busy one block per row
ELEMENTS_PER_THREAD = 32


@dataclass(frozen=True)
class SplitPlan:
    rows: int
    row_size: int
    splits: int
    partial_types: tuple[ir.Type, ...]

    @property
    def scratch_bytes(self) -> list[int]:
        """Bytes of each scratch buffer: one per reduce operand, then the validity flags."""
        blocks = self.rows * self.splits
        return [blocks * _bytes(t) for t in self.partial_types] + [blocks]

    @property
    def counter_bytes(self) -> int:
        return 4 * self.rows


def _bytes(t: ir.Type) -> int:
    if isinstance(t, ir.IntType):
        return max(1, t.width // 8)
    return 8 if isinstance(t, ir.DoubleType) else 4


def plan_split_rows(plan: RowPlan) -> SplitPlan | None:
    rows = math.prod(plan.kept_dims) if plan.kept_dims else 1
    row_size = math.prod(plan.in_dims[d] for d in plan.reduced)
    if len(plan.reduces) != 1 or rows > MAX_ROWS or row_size < MIN_SPLIT_ROW or rows == 0:
        return None
    if any(o.shape.dims == plan.in_dims for o in plan.outputs):
        return None  # element-level outputs need the result in every block
    r = plan.reduces[0]
    n = len(r.operands) // 2
    types = tuple(_storable(value_type(o.shape.dtype)) for o in r.operands[:n])
    if any(t is None for t in types):
        return None
    splits = min(
        THREADS, max(2, row_size // (THREADS * ELEMENTS_PER_THREAD)), max(1, 65535 // rows)
    )
    return SplitPlan(rows, row_size, splits, types)


def _storable(t: ir.Type) -> ir.Type | None:
    if isinstance(t, ir.IntType) and t.width == 1:
        return I8
    return t if isinstance(t, (ir.IntType, ir.FloatType, ir.DoubleType)) else None


def emit_split_row_kernel(
    target: GpuTarget, entry: KernelEntry, comp, plan: RowPlan, split: SplitPlan
) -> LaunchShape:
    """Arguments: parameters, outputs, one partial buffer per reduce operand, the validity
    flags, the row counters."""
    nparams, nouts = len(comp.parameters), len(plan.outputs)
    args = list(entry.buffers)
    params, outs = args[:nparams], args[nparams : nparams + nouts]
    r = plan.reduces[0]
    n = len(r.operands) // 2
    partials, flags, counters = args[nparams + nouts : -2], args[-2], args[-1]
    launch = LaunchShape(split.rows * split.splits, THREADS)
    b, ctx = entry.builder, entry.ctx
    em = RowEmitter(ctx, comp, params, plan.row_level)
    in_dims, kept = plan.in_dims, plan.kept_dims
    tid = b.zext(target.thread_index(b), I64)
    bid = b.zext(target.block_index(b), I64)
    row = b.udiv(bid, i64(split.splits))
    part = b.urem(bid, i64(split.splits))
    chunk = -(-split.row_size // split.splits)
    lo = b.mul(part, i64(chunk))
    hi = b.select(
        b.icmp_unsigned("<", b.add(lo, i64(chunk)), i64(split.row_size)),
        b.add(lo, i64(chunk)),
        i64(split.row_size),
    )
    kept_multi = delinearize(b, row, kept)
    em.start_row(row, kept_multi, kept)
    types = [value_type(o.shape.dtype) for o in r.operands[:n]]
    allocas = [ctx.alloca(t) for t in types]

    def element_index(j: ir.Value) -> Index:
        multi = kept_multi + [j] if len(plan.reduced) == 1 else None
        return Index(b, in_dims, multi=multi, linear=b.add(b.mul(row, i64(split.row_size)), j))

    first_j = b.add(lo, tid)
    seen = b.icmp_unsigned("<", first_j, hi)
    with b.if_then(seen):
        for a, x in zip(allocas, r.operands[:n], strict=True):
            b.store(em.value(x, element_index(first_j)), a)
        em.reset()

        def step(j: ir.Value) -> None:
            accs = [b.load(a, typ=t) for a, t in zip(allocas, types, strict=True)]
            values = [em.value(x, element_index(j)) for x in r.operands[:n]]
            for a, v in zip(allocas, apply_reducer(ctx, r, accs, values), strict=True):
                b.store(v, a)
            em.reset()

        _grid_stride(b, b.add(first_j, i64(THREADS)), hi, i64(THREADS), step, "fold")
    em.reset()

    def combine(left, right):
        return apply_reducer(ctx, r, left, right)

    partial = [b.load(a, typ=t) for a, t in zip(allocas, types, strict=True)]
    total, valid = block_combine(ctx, target, THREADS, partial, seen, combine, f"{r.name}_s1")
    module = entry.function.module
    last_flag = ir.GlobalVariable(
        module, I32, module.get_unique_name("split_last"), addrspace=target.shared_addrspace
    )
    last_flag.linkage = "internal"
    last_flag.initializer = ir.Constant(I32, ir.Undefined)
    counter = b.gep(counters, [row], inbounds=True, source_etype=I32)
    with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
        for buf, t, v in zip(partials, split.partial_types, total, strict=True):
            b.store(_to_stored(b, v, t), b.gep(buf, [bid], inbounds=True, source_etype=t))
        b.store(b.zext(valid, I8), b.gep(flags, [bid], inbounds=True, source_etype=I8))
        b.fence("seq_cst")
        old = b.atomic_rmw("add", counter, ir.Constant(I32, 1), "seq_cst")
        is_last = b.icmp_unsigned("==", old, ir.Constant(I32, split.splits - 1))
        b.store(b.zext(is_last, I32), last_flag)
    target.barrier(b)
    finishing = b.icmp_unsigned("!=", b.load(last_flag), ir.Constant(I32, 0))
    with b.if_then(finishing):
        b.fence("seq_cst")
        _finish_row(ctx, target, em, r, split, partials, flags, row, tid, outs, plan)
        with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
            b.atomic_rmw("xchg", counter, ir.Constant(I32, 0), "seq_cst")
    b.ret_void()
    return launch


def _to_stored(b: ir.IRBuilder, v: ir.Value, t: ir.Type) -> ir.Value:
    return b.zext(v, t) if v.type != t else v


def _finish_row(ctx, target, em, r, split, partials, flags, row, tid, outs, plan) -> None:
    b = ctx.b
    n = len(r.operands) // 2
    types = [value_type(o.shape.dtype) for o in r.operands[:n]]
    has = b.icmp_unsigned("<", tid, i64(split.splits))
    with b.goto_entry_block():
        slots = [ctx.alloca(t) for t in types]
        ok_slot = ctx.alloca(ir.IntType(1))
    b.store(ir.Constant(ir.IntType(1), 0), ok_slot)
    with b.if_then(has):
        at = b.add(b.mul(row, i64(split.splits)), tid)
        for slot, buf, st, t in zip(slots, partials, split.partial_types, types, strict=True):
            raw = b.load_atomic(
                b.gep(buf, [at], inbounds=True, source_etype=st), "monotonic", _bytes(st), typ=st
            )
            b.store(b.trunc(raw, t) if raw.type != t else raw, slot)
        flag = b.load_atomic(
            b.gep(flags, [at], inbounds=True, source_etype=I8), "monotonic", 1, typ=I8
        )
        b.store(b.icmp_unsigned("!=", flag, ir.Constant(I8, 0)), ok_slot)
    values = [b.load(s, typ=t) for s, t in zip(slots, types, strict=True)]

    def combine(left, right):
        return apply_reducer(ctx, r, left, right)

    total, valid = block_combine(
        ctx, target, THREADS, values, b.load(ok_slot), combine, f"{r.name}_s2"
    )
    scalar = Index.scalar(b)
    inits = [em.value(x, scalar) for x in r.operands[n:]]
    folded = apply_reducer(ctx, r, inits, total)
    result = [b.select(valid, f, i) for f, i in zip(folded, inits, strict=True)]
    em.row_values[r] = [
        round_to(b, x.shape.dtype, v) for v, x in zip(result, r.operands[:n], strict=True)
    ]
    with b.if_then(b.icmp_unsigned("==", tid, i64(0))):
        for k, out in enumerate(plan.outputs):
            value = em.value(out, em.row_index(out.shape.dims))
            store_element(b, out.shape.dtype, value, outs[k], row)
    em.reset()


__all__ = ["SplitPlan", "emit_split_row_kernel", "plan_split_rows"]
