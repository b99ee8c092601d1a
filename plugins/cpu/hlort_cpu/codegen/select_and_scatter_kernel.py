"""Select-and-scatter kernels: search each window, combine its source value into the choice.

As the interpreter (and XLA) define it: the output starts as the init value; windows are taken
in row-major order of the source; inside a window the positions are walked in row-major order,
the first real (non-padding) element is selected, and a later candidate replaces the selection
unless ``select(selected, candidate)`` holds (``GE`` keeps the first maximum); a window of only
padding selects nothing. Then ``out[chosen] = scatter(source, out[chosen])``. Both computations
are inlined as scalar code.

Windows may overlap, so the walk is serial, except across leading dimensions whose window is
trivial (size 1, stride 1, no padding or dilation, e.g. the batch of an NHWC pooling): there
window k only touches slab k of the output, so each outer iteration initializes its own slab
and walks its own windows, and slabs run in parallel. When the last dimension's window is
trivial too (the channels of NHWC), the windows along it (consecutive in row-major order) are
searched side by side, a tile at a time: per window position one inner loop over the channels
updates per-channel choices held in small stack arrays (it vectorizes), then the tile's source
values are combined in channel order, which is the windows' order.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter, emit_scalar_computation
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.llvm_types import I64, constant, load_element, store_element, value_type
from hlort.codegen.llvm.loops import emit_loop, emit_nest
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.codegen.llvm.window_index import emit_if, window_axes, window_positions
from hlort.ir.computation import Computation
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.fusion_kernel import open_fusion_kernel
from hlort_cpu.codegen.hero_launch import HeroLaunch

LANE_TILE = 256  # windows searched side by side along a trivially windowed last dimension
code_settings.declare(__name__, "LANE_TILE")


def emit_select_and_scatter(
    module: ir.Module, target: TargetSpec, name: str, comp: Computation
) -> HeroLaunch:
    root = comp.root
    operand, source, init = root.operands
    select, scatter = root.attrs["select"], root.attrs["scatter"]
    shape = root.shape
    dt = operand.shape.dtype
    dims, source_dims = operand.shape.dims, source.shape.dims
    axes = window_axes(dims, source_dims, root.attrs["window"])
    channel = bool(axes) and axes[-1].trivial and dims[-1] > 1
    searched = axes[:-1] if channel else axes
    lead = 0
    while lead < len(searched) and searched[lead].trivial:
        lead += 1
    lanes = dims[-1] if channel else 1
    tile = min(lanes, LANE_TILE)
    tiles = -(-lanes // tile)
    slab = math.prod(dims[lead:])
    window_dims = source_dims[lead : len(searched)]
    sizes = [a.window.size for a in searched[lead:]]
    extent = math.prod(dims[:lead]) if math.prod(dims) else 0
    _fn, b, ctx, params, (out,), begin, end = open_fusion_kernel(module, target, name, comp, 1)
    em = FusedEmitter(ctx, comp, params)
    vt = value_type(dt)
    chosen = b.alloca(I64, size=i64(tile))
    chosen_value = b.alloca(vt, size=i64(tile))

    def slot(array: ir.Value, t: ir.Type, c: ir.Value) -> ir.Value:
        return b.gep(array, [c], inbounds=True, source_etype=t)

    def outer(o: ir.Value) -> None:
        em.reset()
        start = em.value(init, Index.scalar(b))
        base = b.mul(o, i64(slab))

        def fill(j: ir.Value) -> None:
            store_element(b, shape.dtype, start, out, b.add(base, j))

        emit_loop(b, i64(0), i64(slab), fill, "sas_init")
        lead_multi = delinearize(b, o, dims[:lead])

        def window(s: ir.Value) -> None:
            here = delinearize(b, s, window_dims)

            def lane_tile(t: ir.Value) -> None:
                em.reset()
                c0 = b.mul(t, i64(tile))
                c1 = (
                    b.add(c0, i64(tile))
                    if lanes % tile == 0
                    else b.select(
                        b.icmp_signed("<", t, i64(tiles - 1)), b.add(c0, i64(tile)), i64(lanes)
                    )
                )

                def reset(c: ir.Value) -> None:
                    k = b.sub(c, c0)
                    b.store(i64(-1), slot(chosen, I64, k))
                    b.store(constant(dt, 0), slot(chosen_value, vt, k))

                emit_loop(b, c0, c1, reset, "sas_reset")

                def position(ks: list[ir.Value]) -> None:
                    em.reset()
                    ok, multi = window_positions(b, searched[lead:], here, ks)

                    def consider(c: ir.Value) -> None:
                        em.reset()
                        lane = [c] if channel else []
                        index = Index(b, dims, multi=lead_multi + multi + lane)
                        value = em.value(operand, index)
                        at, at_value = (
                            slot(chosen, I64, b.sub(c, c0)),
                            slot(chosen_value, vt, b.sub(c, c0)),
                        )
                        current = b.load(at, typ=I64)
                        current_value = b.load(at_value, typ=vt)
                        keep = emit_scalar_computation(ctx, select, [current_value, value])[0]
                        take = b.or_(b.icmp_signed("<", current, i64(0)), b.not_(keep))
                        b.store(b.select(take, index.linear, current), at)
                        b.store(b.select(take, value, current_value), at_value)

                    emit_if(b, ok, lambda: emit_loop(b, c0, c1, consider, "sas_lanes"))

                emit_nest(b, sizes, position, "sas_win")

                def combine(c: ir.Value) -> None:
                    em.reset()
                    target = b.load(slot(chosen, I64, b.sub(c, c0)), typ=I64)
                    lane = [c] if channel else []

                    def add_source() -> None:
                        where = Index(b, source_dims, multi=lead_multi + here + lane)
                        src = em.value(source, where)
                        current = load_element(b, shape.dtype, out, target)
                        new = emit_scalar_computation(ctx, scatter, [src, current])[0]
                        store_element(b, shape.dtype, new, out, target)

                    emit_if(b, b.icmp_signed(">=", target, i64(0)), add_source, "selected")

                emit_loop(b, c0, c1, combine, "sas_scatter")

            emit_loop(b, i64(0), i64(tiles), lane_tile, "sas_tiles")

        emit_loop(b, i64(0), i64(math.prod(window_dims)), window, "sas_windows")

    emit_loop(b, begin, end, outer, "sas_slabs")
    b.ret_void()
    searches = math.prod(window_dims) * lanes * math.prod(sizes)
    return HeroLaunch((shape,), extent, max(slab + searches, 1))
