"""Dot on the matrix unit: tiles for VMEM, padding to the 128 grid, double-buffered K loop.

Operands are seen as canonical [B, M, K] and [B, K, N] arrays (the DMA descriptor transposes
batch, free and contracting dimensions into place, so no HLO transpose is needed). For each
(b, i, j) output tile the K loop loads lhs tile [tm, tk] and rhs tile [tk, tn] into one of two
VMEM slots while the MXU works on the other: ``mxu.push`` the rhs tile as (tk/128)*(tn/128)
weight blocks, ``mxu.matmul`` streams the tm lhs rows through them, ``mxu.pop`` adds the f32
results into the accumulator tile. Edges are zero-padded in VMEM (M to 8 rows, K and N to 128),
so the arithmetic is exact and the padding costs cycles, as on hardware.

Precision: DEFAULT rounds inputs to bf16 (one pass); HIGH is bf16x3 (three passes, hi/lo split);
HIGHEST is six passes in the timing model and computed exactly in f32 by the simulator, which is
within the bf16x6 error bound. bf16 and float8 inputs are exact in bf16 and always take one pass.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hlort.errors import ResourceExhausted
from hlort.ir.attributes import Precision
from hlort.ir.instruction import Instruction
from hlort.shape import ArrayShape
from hlort_tpusim.compiler.lowering_context import Context
from hlort_tpusim.isa import Instr, var
from hlort_tpusim.program import Kernel, Loop, VmemDecl

if TYPE_CHECKING:
    from hlort_tpusim.compiler.lowering import Lowering

MXU_INPUTS = frozenset({"bf16", "f16", "f32", "f8e4m3fn", "f8e5m2"})
MXU_OUTPUTS = frozenset({"bf16", "f16", "f32"})
_NARROW = frozenset({"bf16", "f8e4m3fn", "f8e5m2"})


def supports(instr: Instruction) -> bool:
    lhs, rhs = (o.shape.dtype.name for o in instr.operands)
    return (
        lhs in MXU_INPUTS
        and rhs in MXU_INPUTS
        and instr.shape.dtype.name in MXU_OUTPUTS
        and instr.shape.size > 0
        and all(o.shape.size > 0 for o in instr.operands)
    )


def precision_of(instr: Instruction) -> str:
    levels = [p for p in instr.attrs.get("operand_precision", ()) if isinstance(p, Precision)]
    narrow = all(o.shape.dtype.name in _NARROW for o in instr.operands)
    if narrow or not levels:
        return "bf16"
    top = max(levels, key=lambda p: [Precision.DEFAULT, Precision.HIGH, Precision.HIGHEST].index(p))
    return {Precision.DEFAULT: "bf16", Precision.HIGH: "bf16x3", Precision.HIGHEST: "bf16x6"}[top]


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


def choose_tiles(
    m: int, k: int, n: int, in_bytes: tuple[int, int], out_bytes: int, vmem_bytes: int, grid: int
) -> tuple[int, int, int]:
    """(tm, tk, tn): as large as 512 each, shrunk (largest first) until the VMEM plan fits."""
    tm = min(_round_up(m, 8), 512)
    tk = min(_round_up(k, grid), 512)
    tn = min(_round_up(n, grid), 512)

    def need(tm: int, tk: int, tn: int) -> int:
        return 2 * tm * tk * in_bytes[0] + 2 * tk * tn * in_bytes[1] + tm * tn * (4 + out_bytes)

    while need(tm, tk, tn) > vmem_bytes:
        if tk >= max(tn, tm) and tk > grid:
            tk = _round_up(tk // 2, grid)
        elif tn >= tm and tn > grid:
            tn = _round_up(tn // 2, grid)
        elif tm > 8:
            tm = _round_up(tm // 2, 8)
        elif tk > grid:
            tk = _round_up(tk // 2, grid)
        elif tn > grid:
            tn = _round_up(tn // 2, grid)
        else:
            raise ResourceExhausted(
                f"tpusim: VMEM of {vmem_bytes} bytes cannot hold the smallest matmul tiles "
                f"({need(tm, tk, tn)} bytes); raise vmem_bytes"
            )
    return tm, tk, tn


def lower_dot(lw: Lowering, ctx: Context, instr: Instruction) -> int:
    dn = instr.attrs["dot_dimension_numbers"]
    lhs, rhs = instr.operands
    lb, lc = list(dn.lhs_batch_dims), list(dn.lhs_contracting_dims)
    rb, rc = list(dn.rhs_batch_dims), list(dn.rhs_contracting_dims)
    lf = [d for d in range(lhs.shape.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.shape.rank) if d not in rb and d not in rc]
    ld, rd = lhs.shape.dims, rhs.shape.dims
    b = math.prod(ld[d] for d in lb)
    m = math.prod(ld[d] for d in lf)
    k = math.prod(ld[d] for d in lc)
    n = math.prod(rd[d] for d in rf)
    lhs_buf = lw.value(ctx, lhs)
    rhs_buf = lw.value(ctx, rhs)
    return emit_matmul(
        lw,
        instr.name,
        lhs_buf,
        lb + lf + lc,
        rhs_buf,
        rb + rc + rf,
        (b, m, k, n),
        instr.shape,
        precision_of(instr),
        f"dot {lhs.shape} x {rhs.shape} -> {instr.shape}",
    )


def emit_matmul(
    lw: Lowering,
    name: str,
    lhs_buf: int,
    lhs_perm: list[int],
    rhs_buf: int,
    rhs_perm: list[int],
    sizes: tuple[int, int, int, int],
    out_shape: ArrayShape,
    precision: str,
    title: str,
) -> int:
    """The tiled MXU kernel computing out[B, M, N] = lhs[B, M, K] @ rhs[B, K, N]."""
    cfg = lw.config
    b, m, k, n = sizes
    lshape, rshape = lw.buffer_shape(lhs_buf), lw.buffer_shape(rhs_buf)
    out_dt = out_shape.dtype.name
    convert = out_dt != "f32"
    tm, tk, tn = choose_tiles(
        m,
        k,
        n,
        (lshape.dtype.itemsize, rshape.dtype.itemsize),
        out_shape.dtype.itemsize if convert else 0,
        cfg.vmem_bytes,
        cfg.mxu_dim,
    )
    mt, kt, nt = -(-m // tm), -(-k // tk), -(-n // tn)
    out = lw.new_buffer(out_shape, name)
    decls = [VmemDecl("lhs", lshape.dtype.name, (tm, tk), 2, 0)]
    decls.append(VmemDecl("rhs", rshape.dtype.name, (tk, tn), 2, decls[-1].nbytes))
    decls.append(VmemDecl("acc", "f32", (tm, tn), 1, decls[-1].offset + decls[-1].nbytes))
    if convert:
        decls.append(VmemDecl("res", out_dt, (tm, tn), 1, decls[-1].offset + decls[-1].nbytes))
    bi = var("b") if b > 1 else 0

    def lhs_in(slot, kk, sem, when=None):
        access = {
            "kind": "block",
            "perm": lhs_perm,
            "view": [b, m, k],
            "tile": [tm, tk],
            "index": [bi, var("i"), kk],
        }
        return Instr(
            "dma.in",
            {"dst": "lhs", "slot": slot, "src": lhs_buf, "access": access, "sem": sem},
            when=when,
        )

    def rhs_in(slot, kk, sem, when=None):
        access = {
            "kind": "block",
            "perm": rhs_perm,
            "view": [b, k, n],
            "tile": [tk, tn],
            "index": [bi, kk, var("j")],
        }
        return Instr(
            "dma.in",
            {"dst": "rhs", "slot": slot, "src": rhs_buf, "access": access, "sem": sem},
            when=when,
        )

    nxt = {"var": "k", "add": 1, "lt": kt}
    blocks = (tk // cfg.mxu_dim) * (tn // cfg.mxu_dim)
    k_body = [
        lhs_in(var("k", add=1, mod=2), var("k", add=1), var("k", add=1, mod=2), nxt),
        rhs_in(var("k", add=1, mod=2), var("k", add=1), dict(var("k", add=1, mod=2), base=2), nxt),
        Instr("wait", {"sems": [var("k", mod=2), dict(var("k", mod=2), base=2)]}),
        Instr("mxu.push", {"src": "rhs", "slot": var("k", mod=2), "precision": precision}),
        Instr(
            "mxu.matmul",
            {
                "src": "lhs",
                "slot": var("k", mod=2),
                "precision": precision,
                "blocks": blocks,
                "rows": tm,
            },
        ),
        Instr("mxu.pop", {"dst": "acc", "accumulate": var("k")}),
    ]
    tile_body = [lhs_in(0, 0, 0), rhs_in(0, 0, 2), Loop("k", kt, k_body)]
    result = "acc"
    if convert:
        vregs = -(-tm * tn // cfg.vreg_elements)
        tile_body.append(
            Instr(
                "vloop",
                {"count": vregs, "space": None, "index": []},
                body=[
                    Instr("vld", {"dst": "r0", "src": "acc", "slot": 0}),
                    Instr(
                        "v.op",
                        {
                            "op": "convert",
                            "dst": "r1",
                            "srcs": ["r0"],
                            "dtype": out_dt,
                            "src_dtypes": ["f32"],
                            "attrs": {},
                        },
                    ),
                    Instr("vst", {"dst": "res", "slot": 0, "src": "r1"}),
                ],
            )
        )
        result = "res"
    out_access = {
        "kind": "block",
        "perm": list(range(out_shape.rank)),
        "view": [b, m, n],
        "tile": [tm, tn],
        "index": [bi, var("i"), var("j")],
    }
    tile_body.append(
        Instr("dma.out", {"dst": out, "access": out_access, "src": result, "slot": 0, "sem": 4})
    )
    nest: list = [Loop("i", mt, [Loop("j", nt, tile_body)])]
    if b > 1:
        nest = [Loop("b", b, nest)]
    title = f"{title} on the MXU, tiles {tm}x{tk}x{tn} ({mt}x{kt}x{nt}), {precision}"
    bulk = {
        "kind": "matmul",
        "lhs": lhs_buf,
        "lhs_perm": lhs_perm,
        "rhs": rhs_buf,
        "rhs_perm": rhs_perm,
        "sizes": [b, m, k, n],
        "out": out,
        "precision": precision,
    }
    lw.emit(Kernel(lw.kernel_name(name), title, decls, nest, bulk))
    return out
