"""Transposes through shared-memory tiles: coalesced reads and coalesced writes.

A transpose that swaps the two minor dimensions (``[R, C] -> [C, R]``, or batched ``[N, R, C] ->
[N, C, R]``) of a parameter runs as 32 x 32 tiles: a block of 256 threads (32 x 8) reads a tile
row by row (consecutive threads read consecutive elements), stores it in shared memory padded to
33 columns (no bank conflicts on the column reads), and after a barrier writes it out row by row
of the output. Other transposes run in the loop schedule (correct, but one side uncoalesced).
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.gpu.launch import LaunchShape
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import I64, storage_type
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode

TILE = 32
ROWS_PER_PASS = 8
MIN_SIDE = 32  # smaller matrices gain nothing from tiles


@dataclass(frozen=True)
class TransposePlan:
    batch: int
    rows: int  # R: the input's second-minor dimension
    cols: int  # C: the input's minor dimension
    dtype: object


def plan_tiled_transpose(comp: Computation) -> TransposePlan | None:
    root = comp.root
    if root.opcode is not Opcode.TRANSPOSE or root.operands[0].opcode is not Opcode.PARAMETER:
        return None
    dims = root.operands[0].shape.dims
    perm = tuple(root.attrs["dimensions"])
    dt = root.shape.dtype
    if dt.is_complex or len(dims) not in (2, 3):
        return None
    if perm not in ((1, 0), (0, 2, 1)):
        return None
    rows, cols = dims[-2], dims[-1]
    if min(rows, cols) < MIN_SIDE:
        return None
    return TransposePlan(dims[0] if len(dims) == 3 else 1, rows, cols, dt)


def emit_transpose_kernel(
    target: GpuTarget, entry: KernelEntry, comp: Computation, plan: TransposePlan
) -> LaunchShape:
    src, dst = entry.buffers
    st = storage_type(plan.dtype)
    tiles_r = -(-plan.rows // TILE)
    tiles_c = -(-plan.cols // TILE)
    tiles = plan.batch * tiles_r * tiles_c
    threads = TILE * ROWS_PER_PASS
    launch = LaunchShape(max(1, min(tiles, target.max_grid_blocks)), threads)
    b = entry.builder
    module = entry.function.module
    tile_t = ir.ArrayType(ir.ArrayType(st, TILE + 1), TILE)
    smem = ir.GlobalVariable(
        module, tile_t, module.get_unique_name("transpose_tile"), addrspace=target.shared_addrspace
    )
    smem.linkage = "internal"
    smem.initializer = ir.Constant(tile_t, ir.Undefined)
    smem.align = 16
    tid = target.thread_index(b)
    tx = b.zext(b.and_(tid, ir.Constant(I32, TILE - 1)), I64)
    ty = b.zext(b.lshr(tid, ir.Constant(I32, 5)), I64)
    rows, cols = i64(plan.rows), i64(plan.cols)

    def cell(r: ir.Value, c: ir.Value) -> ir.Value:
        return b.gep(smem, [ir.Constant(I32, 0), b.trunc(r, I32), b.trunc(c, I32)], inbounds=True)

    def one_tile(t: ir.Value) -> None:
        per_matrix = tiles_r * tiles_c
        n = b.udiv(t, i64(per_matrix))
        rest = b.urem(t, i64(per_matrix))
        r0 = b.mul(b.udiv(rest, i64(tiles_c)), i64(TILE))
        c0 = b.mul(b.urem(rest, i64(tiles_c)), i64(TILE))
        base = b.mul(n, i64(plan.rows * plan.cols))
        for k in range(TILE // ROWS_PER_PASS):
            ly = b.add(ty, i64(k * ROWS_PER_PASS))
            r, c = b.add(r0, ly), b.add(c0, tx)
            inside = b.and_(b.icmp_unsigned("<", r, rows), b.icmp_unsigned("<", c, cols))
            with b.if_then(inside):
                at = b.add(base, b.add(b.mul(r, cols), c))
                value = b.load(b.gep(src, [at], inbounds=True, source_etype=st), typ=st)
                b.store(value, cell(ly, tx))
        target.barrier(b)
        for k in range(TILE // ROWS_PER_PASS):
            ly = b.add(ty, i64(k * ROWS_PER_PASS))
            orow, ocol = b.add(c0, ly), b.add(r0, tx)  # output [C, R]
            inside = b.and_(b.icmp_unsigned("<", orow, cols), b.icmp_unsigned("<", ocol, rows))
            with b.if_then(inside):
                at = b.add(base, b.add(b.mul(orow, rows), ocol))
                value = b.load(cell(tx, ly), typ=st)
                b.store(value, b.gep(dst, [at], inbounds=True, source_etype=st))
        target.barrier(b)

    start = b.zext(target.block_index(b), I64) if launch.blocks > 1 else i64(0)
    _grid_stride(b, start, i64(tiles), i64(launch.blocks), one_tile, "tiles")
    b.ret_void()
    return launch


__all__ = ["TransposePlan", "emit_transpose_kernel", "plan_tiled_transpose"]
