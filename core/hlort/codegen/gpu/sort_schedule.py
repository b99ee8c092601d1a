"""Sort and top-k on the GPU: one block per row, the interpreter's sorting network in parallel.

The result must be the interpreter's permutation bit for bit (interpreter/ops/sort.py), and
``plan_sort`` (hlort.codegen.llvm.sort_plan) says which of its two algorithms applies:

- ``"network"`` (any exactly compiled comparator, even one that is not a strict weak order):
  the interpreter runs Batcher's odd-even merge network over the row padded to a power of two,
  with its tie rule (a pair swaps when ``cmp(later, earlier)``, or when neither is less and the
  later one came first originally). The compare-exchanges of one stage touch disjoint pairs, so
  the block runs each stage's pairs on all its threads at once with a barrier between stages:
  the same sequence of swaps, hence the same permutation. The comparator is inlined; one with
  a transcendental (exp, log, ...) is inlined as ``wide_comparator`` rewrites it: those ops in
  f64 and rounded once, as the interpreter computes them (equal to its values but for about
  1e-8 of f32 values); such an op on f64 or c128 values, or a TOTALORDER compare or
  bitcast-convert of its result (which sees a NaN's sign), keeps the sort on the host.
- ``"radix"`` (lexicographic strict compares: the interpreter's ``np.lexsort``, a stable sort
  by integer keys): the same network with ``cmp`` = the lexicographic order of the keys mapped
  as the interpreter maps them (TOTALORDER bits for floats, -0.0 -> +0.0 and one NaN where
  canonical, reversed where descending). With the position tie rule that is a total order, so
  the network's result is the unique stable sort: the interpreter's.

Every sort is therefore stable (``is_stable`` or not, as the interpreter is). The network sorts
a permutation of i32 positions; the operands are read through it (payload operands of a
multi-operand sort are just read at the sorted positions at the end). The permutation lives in
shared memory when it fits (``SHARED_PERM_BYTES``), else in a global scratch of one row per
block (same code; barriers order global memory within a block too): correct for any row
length, slower. top-k is the stable descending (or ascending) sort by TOTALORDER, of which the
first k values and positions are written.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.gpu.wide_comparator import widened_network_plan
from hlort.codegen.llvm.fused_emitter import emit_scalar_computation
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I64, load_element, storage_type
from hlort.codegen.llvm.sort_plan import KeyField, SortPlan, plan_sort
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

SHARED_PERM_BYTES = 16384  # rows up to 4096 (padded) sort their permutation in shared memory
BLOCK = 256
MAX_SCRATCH_BYTES = 1 << 28  # the global permutations of all blocks together
# The largest bit pattern (sign cleared) that is not a NaN, per float type: NaN above it.
_NOT_NAN_LIMIT = {
    dtypes.F16: 0x7C00,
    dtypes.BF16: 0x7F80,
    dtypes.F32: 0x7F800000,
    dtypes.F64: 0x7FF0000000000000,
    dtypes.F8E5M2: 0x7C,
    dtypes.F8E4M3FN: 0x7E,
}


@dataclass(frozen=True)
class GpuSortPlan:
    sort: SortPlan
    size: int  # the row padded to a power of two
    threads: int
    blocks: int

    @property
    def shared(self) -> bool:
        return self.size * 4 <= SHARED_PERM_BYTES

    @property
    def scratch_bytes(self) -> int:
        return 0 if self.shared else self.blocks * self.size * 4

    @property
    def schedule(self) -> str:
        kind = "topk" if self.sort.top_k is not None else "sort"
        return f"{kind}_{'shared' if self.shared else 'global'}"


def sorted_instruction(comp) -> Instruction:
    """The sort / top-k of a wrapped computation (compiler.wrap_instruction)."""
    root = comp.root
    return root.operands[0].operands[0] if root.opcode is Opcode.TUPLE else root


def plan_gpu_sort(target: GpuTarget, instr: Instruction) -> tuple[GpuSortPlan | None, str]:
    """The GPU plan for a sort or top-k on parameters, or None and why it stays on the host."""
    plan = plan_sort(instr) or widened_network_plan(instr)
    if plan is None:
        return None, (
            "its comparator has a transcendental on f64 or c128 values (the compiled f64 "
            "functions could order neighbouring values differently from the interpreter's), "
            "sees the sign of a NaN a transcendental returns (a TOTALORDER compare or "
            "bitcast-convert of it: NumPy's and the kernel's NaN signs differ), or has an op or "
            "element type the GPU emitter lacks"
        )
    if any(k.canonical and k.dtype not in _NOT_NAN_LIMIT for k in plan.keys):
        return None, "a canonicalized key of an element type without a NaN rule here"
    size = 1 << max(0, (plan.n - 1).bit_length())
    if size >= 1 << 31:
        return None, "a row of 2^31 or more elements"
    threads = min(BLOCK, target.max_threads_per_block, max(1, size // 2))
    blocks = max(1, min(plan.rows, target.max_grid_blocks))
    if size * 4 > SHARED_PERM_BYTES:
        blocks = max(1, min(blocks, MAX_SCRATCH_BYTES // (size * 4)))
    return GpuSortPlan(plan, size, threads, blocks), ""


def emit_sort_kernel(
    target: GpuTarget, entry: KernelEntry, nparams: int, gplan: GpuSortPlan
) -> LaunchShape:
    """Arguments: the operands, the outputs (values..., and top-k's positions), then the
    permutation scratch when it is global."""
    plan, size, threads = gplan.sort, gplan.size, gplan.threads
    b, ctx = entry.builder, entry.ctx
    params = list(entry.buffers[:nparams])
    nouts = 2 if plan.top_k is not None else len(plan.dtypes)
    outs = list(entry.buffers[nparams : nparams + nouts])
    n, inner, rows = plan.n, plan.inner, plan.rows
    launch = LaunchShape(gplan.blocks, threads)
    tid = b.zext(target.thread_index(b), I64)
    bid = b.zext(target.block_index(b), I64) if gplan.blocks > 1 else i64(0)
    if gplan.shared:
        arr = ir.ArrayType(I32, size)
        gv = ir.GlobalVariable(
            b.module, arr, b.module.get_unique_name("sort_perm"), target.shared_addrspace
        )
        gv.linkage = "internal"
        gv.initializer = ir.Constant(arr, ir.Undefined)
        gv.align = 16
        perm = b.gep(gv, [ir.Constant(I32, 0), ir.Constant(I32, 0)], inbounds=True)
    else:
        perm = b.gep(entry.buffers[-1], [b.mul(bid, i64(size))], inbounds=True, source_etype=I32)

    def slot(j: ir.Value) -> ir.Value:
        return b.gep(perm, [j], inbounds=True, source_etype=I32)

    def row(r: ir.Value) -> None:
        outer = b.udiv(r, i64(inner)) if inner > 1 else r
        within = b.urem(r, i64(inner)) if inner > 1 else None

        def element(j: ir.Value) -> ir.Value:
            linear = b.add(b.mul(outer, i64(n)), j)
            return b.add(b.mul(linear, i64(inner)), within) if inner > 1 else linear

        _grid_stride(
            b, tid, i64(size), i64(threads), lambda j: b.store(b.trunc(j, I32), slot(j)), "init"
        )
        target.barrier(b)
        less = _comparator(ctx, plan, params, element)
        _network(
            b, target, size, threads, tid, lambda a, k: _compare_exchange(b, slot, less, n, a, k)
        )
        count = plan.top_k if plan.top_k is not None else n

        def write(j: ir.Value) -> None:
            src = b.zext(b.load(slot(j), typ=I32), I64)
            at = b.add(b.mul(r, i64(count)), j) if plan.top_k is not None else element(j)
            for x, out, dt in zip(params, outs, plan.dtypes, strict=False):
                st = storage_type(dt)
                value = b.load(b.gep(x, [element(src)], inbounds=True, source_etype=st), typ=st)
                b.store(value, b.gep(out, [at], inbounds=True, source_etype=st))
            if plan.top_k is not None:
                b.store(b.trunc(src, I32), b.gep(outs[1], [at], inbounds=True, source_etype=I32))

        _grid_stride(b, tid, i64(count), i64(threads), write, "write")
        target.barrier(b)  # the next row reuses the permutation

    if rows and n:
        _grid_stride(b, bid, i64(rows), i64(gplan.blocks), row, "rows")
    b.ret_void()
    return launch


def _network(b: ir.IRBuilder, target: GpuTarget, size: int, threads: int, tid, exchange) -> None:
    """Batcher's odd-even merge stages (interpreter.ops.sort.batcher_stages), each stage's
    pairs spread over the block's threads, a barrier after each: ``exchange(low, k)``."""
    if size < 2:
        return
    fn = b.block.function
    pre = b.block
    p_loop, k_loop, k_end, done = (
        fn.append_basic_block(f"net.{s}") for s in ("p", "k", "kend", "done")
    )
    b.branch(p_loop)
    b.position_at_end(p_loop)
    p = b.phi(I64, "net.p")
    p.add_incoming(i64(1), pre)
    b.branch(k_loop)
    b.position_at_end(k_loop)
    k = b.phi(I64, "net.k")
    k.add_incoming(p, p_loop)
    r = b.and_(k, b.sub(p, i64(1)))  # k % p (powers of two)
    two_k, two_p = b.shl(k, i64(1)), b.shl(p, i64(1))

    def pair(a: ir.Value) -> None:
        d = b.sub(a, r)
        ok = b.icmp_unsigned(">=", a, r)
        ok = b.and_(ok, b.icmp_unsigned("<", b.and_(d, b.sub(two_k, i64(1))), k))
        same = b.icmp_unsigned("==", b.udiv(a, two_p), b.udiv(b.add(a, k), two_p))
        with b.if_then(b.and_(ok, same)):
            exchange(a, k)

    _grid_stride(b, tid, b.sub(i64(size), k), i64(threads), pair, "pairs")
    target.barrier(b)
    next_k = b.lshr(k, i64(1))
    k.add_incoming(next_k, b.block)
    b.cbranch(b.icmp_unsigned(">=", next_k, i64(1)), k_loop, k_end)
    b.position_at_end(k_end)
    next_p = b.shl(p, i64(1))
    p.add_incoming(next_p, k_end)
    b.cbranch(b.icmp_unsigned("<", next_p, i64(size)), p_loop, done)
    b.position_at_end(done)


def _compare_exchange(b: ir.IRBuilder, slot, less, n: int, low: ir.Value, k: ir.Value) -> None:
    """The interpreter's compare-exchange of positions ``low`` and ``low + k``."""
    low_ptr, high_ptr = slot(low), slot(b.add(low, k))
    pl = b.zext(b.load(low_ptr, typ=I32), I64)
    ph = b.zext(b.load(high_ptr, typ=I32), I64)
    real_l = b.icmp_unsigned("<", pl, i64(n))
    real_h = b.icmp_unsigned("<", ph, i64(n))
    last = i64(n - 1)
    cl = b.select(real_l, pl, last)
    ch = b.select(real_h, ph, last)
    h_lt_l = less(ch, cl)
    l_lt_h = less(cl, ch)
    tie = b.and_(b.not_(l_lt_h), b.icmp_unsigned("<", ph, pl))
    swap = b.and_(real_h, b.or_(b.not_(real_l), b.or_(h_lt_l, tie)))
    with b.if_then(swap):
        b.store(b.trunc(ph, I32), low_ptr)
        b.store(b.trunc(pl, I32), high_ptr)


def _comparator(ctx, plan: SortPlan, params, element):
    """``less(i, j)``: whether the row's element at position i goes before the one at j (an i1)."""
    b = ctx.b
    if plan.strategy == "network":

        def less(i, j):
            xi = [
                load_element(b, dt, x, element(i))
                for dt, x in zip(plan.dtypes, params, strict=True)
            ]
            xj = [
                load_element(b, dt, x, element(j))
                for dt, x in zip(plan.dtypes, params, strict=True)
            ]
            args = [v for pair in zip(xi, xj, strict=True) for v in pair]
            return emit_scalar_computation(ctx, plan.comparator, args)[0]

        return less

    def less(i, j):
        result = ir.Constant(ir.IntType(1), 0)
        for key in reversed(plan.keys):
            x = params[key.operand]
            ki, kj = (_key(b, key, x, element(p)) for p in (i, j))
            if key.descending:
                ki, kj = kj, ki
            cmp = b.icmp_unsigned if _unsigned(key) else b.icmp_signed
            result = b.or_(cmp("<", ki, kj), b.and_(b.icmp_unsigned("==", ki, kj), result))
        return result

    return less


def _unsigned(key: KeyField) -> bool:
    return key.dtype.is_pred or key.dtype.is_unsigned_integer


def _key(b: ir.IRBuilder, key: KeyField, x: ir.Value, index: ir.Value) -> ir.Value:
    """The element's integer key, ordered as the interpreter's ``order_key``."""
    dt = key.dtype
    st = storage_type(dt)
    raw = b.load(b.gep(x, [index], inbounds=True, source_etype=st), typ=st)
    if not dt.is_float:
        # s4/u4 sit in the low nibble of a byte: compare them as 4-bit values (sign bit 3)
        return b.trunc(raw, ir.IntType(dt.bits)) if dt.is_sub_byte_integer else raw
    bits = dt.bits
    it = ir.IntType(bits)
    v = raw if st == it else b.bitcast(raw, it)
    if key.canonical:
        limit = _NOT_NAN_LIMIT[dt]
        magnitude = b.and_(v, ir.Constant(it, (1 << (bits - 1)) - 1))
        v = b.select(b.icmp_unsigned("==", magnitude, ir.Constant(it, 0)), ir.Constant(it, 0), v)
        nan = b.icmp_unsigned(">", magnitude, ir.Constant(it, limit))
        v = b.select(nan, ir.Constant(it, limit + 1), v)
    flip = b.lshr(b.ashr(v, ir.Constant(it, bits - 1)), ir.Constant(it, 1))
    return b.xor(v, flip)


def sort_output_count(gplan: GpuSortPlan) -> int:
    return 2 if gplan.sort.top_k is not None else len(gplan.sort.dtypes)


__all__ = [
    "GpuSortPlan",
    "emit_sort_kernel",
    "plan_gpu_sort",
    "sort_output_count",
    "sorted_instruction",
]
