"""hlort's own tiled dot kernel, for dots no vendor library runs (dot_plan.py says which).

One block of 256 threads computes a 64 x 64 tile of ``C[b]``; every thread holds a 4 x 4 register
tile of accumulators, rows ``ty + 16i`` and columns ``tx + 16j`` (``tx = tid % 16``, ``ty = tid /
16``), so the final stores of a warp are consecutive columns. The contraction runs in k-steps of
16: the block copies a 64 x 16 slab of A and a 16 x 64 slab of B into shared memory (converted
to the accumulation type; consecutive threads read consecutive elements of whichever index is
the operand's minor one), waits at a barrier, and every thread adds its 4 x 16 x 4 products
(unrolled; each product rounded, then added: no fused multiply-add is asked for), in k order from
+0, exactly the interpreter's order (contraction_arith.py: complex products are the naive
``(ac - bd) + (ad + bc)i``, pred x pred -> pred the OR of ANDs). Edges are bounds-checked:
rows, columns and k beyond the dot's load zeros (both operands, so an infinity never meets a
padded 0) and are never stored; K = 0 stores zeros. Tiles beyond the grid are taken by a
grid-stride loop. The kernel uses no cross-lane operation, so the warp size (32, or a wavefront
of 64) only has to divide the block.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.gpu.contraction_arith import ContractionArith
from hlort.codegen.gpu.dot_plan import DotPlan, IndexMap
from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I64, load_element, store_element
from hlort.errors import Internal

TILE_M = 64
TILE_N = 64
TILE_K = 16
THREADS = 256
SIDE = 16  # threads per tile row and per tile column
REG_M = TILE_M // SIDE  # accumulator rows per thread
REG_N = TILE_N // SIDE
KK_UNROLL = 4  # slab rows per iteration of the inner loop


def dot_launch(target: GpuTarget, plan: DotPlan) -> LaunchShape:
    tiles = plan.batch * _tiles(plan.m, TILE_M) * _tiles(plan.n, TILE_N)
    return LaunchShape(max(1, min(tiles, target.max_grid_blocks)), THREADS)


def _tiles(size: int, tile: int) -> int:
    return -(-size // tile)


def _offset(b: ir.IRBuilder, index: ir.Value, imap: IndexMap) -> ir.Value:
    """The element offset of flat ``index`` through ``imap`` (constant divisors)."""
    if not imap.sizes:
        return i64(0)
    total = None
    rest = index
    for k in range(len(imap.sizes) - 1, -1, -1):
        size, stride = imap.sizes[k], imap.strides[k]
        digit = rest if k == 0 else b.urem(rest, i64(size))
        if k:
            rest = b.udiv(rest, i64(size))
        term = b.mul(digit, i64(stride)) if stride != 1 else digit
        total = term if total is None else b.add(total, term)
    return total


def _no_unroll(module: ir.Module) -> ir.MDValue:
    """A distinct loop ID with ``llvm.loop.unroll.disable``: a short K's k-steps unrolled
    would keep several slabs' products live at once (on AMDGPU: 256 VGPRs and a stack)."""
    hint = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    count = getattr(module, "_hlort_dot_loops", 0)
    module._hlort_dot_loops = count + 1
    loop = module.add_metadata([hint, ir.MetaDataString(module, f"hlort.dot.k.{count}")])
    loop.operands = (loop, hint)
    return loop


def emit_dot_kernel(target: GpuTarget, entry: KernelEntry, plan: DotPlan) -> LaunchShape:
    if THREADS % target.warp_size or THREADS > target.max_threads_per_block:
        raise Internal(f"dot kernel: {THREADS} threads do not fit target {target.name}")
    launch = dot_launch(target, plan)
    _DotEmitter(target, entry, plan).emit(launch)
    return launch


class _DotEmitter:
    def __init__(self, target: GpuTarget, entry: KernelEntry, plan: DotPlan):
        self.target, self.plan = target, plan
        self.lhs, self.rhs, self.out = entry.buffers
        self.ctx, self.b = entry.ctx, entry.builder
        self.module = entry.function.module
        self.arith = ContractionArith(self.ctx, plan.lhs_dtype, plan.rhs_dtype, plan.out_dtype)
        self.acc_t, self.zero = self.arith.acc_t, self.arith.zero

    def shared(self, name: str, cols: int) -> ir.GlobalVariable:
        t = ir.ArrayType(ir.ArrayType(self.acc_t, cols), TILE_K)
        m = self.module
        g = ir.GlobalVariable(m, t, m.get_unique_name(name), addrspace=self.target.shared_addrspace)
        g.linkage = "internal"
        g.initializer = ir.Constant(t, ir.Undefined)
        g.align = 16
        return g

    def emit(self, launch: LaunchShape) -> None:
        b, plan = self.b, self.plan
        self.a_tile, self.b_tile = self.shared("dot_a", TILE_M), self.shared("dot_b", TILE_N)
        tid32 = self.target.thread_index(b)
        self.tid = b.zext(tid32, I64)
        self.tx = b.zext(b.urem(tid32, ir.Constant(I32, SIDE)), I64)
        self.ty = b.zext(b.udiv(tid32, ir.Constant(I32, SIDE)), I64)
        tiles = plan.batch * _tiles(plan.m, TILE_M) * _tiles(plan.n, TILE_N)
        start = b.zext(self.target.block_index(b), I64) if launch.blocks > 1 else i64(0)
        _grid_stride(b, start, i64(tiles), i64(launch.blocks), self.one_tile, "tiles")
        b.ret_void()

    def cell(self, tile: ir.GlobalVariable, kk: ir.Value, x: ir.Value) -> ir.Value:
        b = self.b
        return b.gep(tile, [ir.Constant(I32, 0), b.trunc(kk, I32), b.trunc(x, I32)], inbounds=True)

    def one_tile(self, t: ir.Value) -> None:
        b, plan = self.b, self.plan
        tiles_m, tiles_n = _tiles(plan.m, TILE_M), _tiles(plan.n, TILE_N)
        batch = b.udiv(t, i64(tiles_m * tiles_n))
        rest = b.urem(t, i64(tiles_m * tiles_n))
        m0 = b.mul(b.udiv(rest, i64(tiles_n)), i64(TILE_M))
        n0 = b.mul(b.urem(rest, i64(tiles_n)), i64(TILE_N))
        bases = (_offset(b, batch, plan.lhs_batch), _offset(b, batch, plan.rhs_batch))
        accs = [[self.zero] * REG_N for _ in range(REG_M)]
        if plan.k > 0:
            accs = self.k_loop(accs, m0, n0, bases)
        out_base = b.mul(batch, i64(plan.m * plan.n))
        for i in range(REG_M):
            row = b.add(m0, b.add(self.ty, i64(i * SIDE)))
            for j in range(REG_N):
                col = b.add(n0, b.add(self.tx, i64(j * SIDE)))
                inside = b.and_(
                    b.icmp_unsigned("<", row, i64(plan.m)), b.icmp_unsigned("<", col, i64(plan.n))
                )
                with b.if_then(inside):
                    at = b.add(out_base, b.add(b.mul(row, i64(plan.n)), col))
                    value = self.arith.to_out(accs[i][j])
                    store_element(b, plan.out_dtype, value, self.out, at)

    def phi_loop(self, stop: int, step: int, accs, body, name: str):
        """``for k in range(0, stop, step)`` (at least once; never unrolled by LLVM) carrying
        the accumulators as phis (registers, never memory); ``body(k, accs)`` returns the new
        accumulators; the loop's last ones are returned."""
        b = self.b
        fn = b.block.function
        pre = b.block
        loop = fn.append_basic_block(f"{name}.body")
        after = fn.append_basic_block(f"{name}.end")
        b.branch(loop)
        b.position_at_end(loop)
        k = b.phi(I64, name=name)
        k.add_incoming(i64(0), pre)
        phis = [[b.phi(self.acc_t) for _ in range(REG_N)] for _ in range(REG_M)]
        for i in range(REG_M):
            for j in range(REG_N):
                phis[i][j].add_incoming(accs[i][j], pre)
        new = body(k, phis)
        nxt = b.add(k, i64(step), flags=("nuw", "nsw"))
        k.add_incoming(nxt, b.block)
        for i in range(REG_M):
            for j in range(REG_N):
                phis[i][j].add_incoming(new[i][j], b.block)
        latch = b.cbranch(b.icmp_unsigned("<", nxt, i64(stop)), loop, after)
        latch.set_metadata("llvm.loop", _no_unroll(self.module))
        b.position_at_end(after)
        return new

    def k_loop(self, accs, m0, n0, bases):
        """The k-steps: load both slabs, barrier, add the products, barrier."""
        plan = self.plan

        def k_step(k0, accs):
            self.load_slab(
                self.a_tile,
                self.lhs,
                plan.lhs_dtype,
                k0,
                (m0, plan.m),
                plan.lhs_m,
                plan.lhs_k,
                bases[0],
                TILE_M,
            )
            self.load_slab(
                self.b_tile,
                self.rhs,
                plan.rhs_dtype,
                k0,
                (n0, plan.n),
                plan.rhs_n,
                plan.rhs_k,
                bases[1],
                TILE_N,
            )
            self.target.barrier(self.b)
            accs = self.phi_loop(TILE_K, KK_UNROLL, accs, self.products, "kk")
            self.target.barrier(self.b)
            return accs

        return self.phi_loop(plan.k, TILE_K, accs, k_step, "k")

    def products(self, kq, accs):
        """KK_UNROLL k indices of the slabs from ``kq``: each thread's 4 x 4 products, added in
        k order. A loop of its own (not 16 unrolled), so that LLVM's schedulers never hold more
        than KK_UNROLL slab rows in registers (a one-step K unrolled took 145 registers)."""
        b = self.b
        new = [list(row) for row in accs]
        for u in range(KK_UNROLL):
            kk = b.add(kq, i64(u))
            a_vals = [self.slab_value(self.a_tile, kk, self.ty, i) for i in range(REG_M)]
            b_vals = [self.slab_value(self.b_tile, kk, self.tx, j) for j in range(REG_N)]
            for i in range(REG_M):
                for j in range(REG_N):
                    new[i][j] = self.arith.multiply_add(new[i][j], a_vals[i], b_vals[j])
        return new

    def slab_value(self, tile, kk, lane, r):
        b = self.b
        return b.load(self.cell(tile, kk, b.add(lane, i64(r * SIDE))), typ=self.acc_t)

    def load_slab(self, tile, src, dtype, k0, x_range, x_map, k_map, base, width) -> None:
        """``tile[kk][x] = src[x0 + x, k0 + kk]`` converted to the accumulation type (0 outside
        the dot), this thread's share of the TILE_K x ``width`` slab; consecutive threads run
        along the operand's minor index."""
        b, plan = self.b, self.plan
        x0, extent = x_range
        k_minor = k_map.unit_minor and not x_map.unit_minor
        for r in range(TILE_K * width // THREADS):
            e = b.add(self.tid, i64(r * THREADS))
            if k_minor:
                kk, x = b.urem(e, i64(TILE_K)), b.udiv(e, i64(TILE_K))
            else:
                x, kk = b.urem(e, i64(width)), b.udiv(e, i64(width))
            gx, gk = b.add(x0, x), b.add(k0, kk)
            inside = b.and_(
                b.icmp_unsigned("<", gx, i64(extent)), b.icmp_unsigned("<", gk, i64(plan.k))
            )
            slot = self.cell(tile, kk, x)
            with b.if_else(inside) as (then, otherwise):
                with then:
                    at = b.add(base, b.add(_offset(b, gx, x_map), _offset(b, gk, k_map)))
                    value = load_element(b, dtype, src, at)
                    b.store(self.arith.to_acc(value, dtype), slot)
                with otherwise:
                    b.store(self.zero, slot)


__all__ = ["THREADS", "TILE_K", "TILE_M", "TILE_N", "dot_launch", "emit_dot_kernel"]
