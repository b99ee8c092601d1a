"""Reduce-window kernels: every output element folds its window, producers fused.

Each output element folds ``acc = reducer(acc, x)`` over its window positions in row-major
order, from the init value, skipping padding and base-dilation holes (window_index.py): the
order XLA and the interpreter use, so results match bit for bit (float sums included; narrow
floats round after every step, as the emitted add does). The reducer is inlined as scalar code
without reassociation flags. Variadic reduce-windows fold all their accumulators together.

Row form (rank >= 1): an outer iteration is a tile of one output row (the last dimension). The
tile is set to the init values; then, for each window position in row-major order whose leading
coordinates are in bounds (checked once per position), one inner loop folds the operand into
the tile over exactly the stretch of outputs whose last coordinate lands inside the operand
(an interval computed per position, so the loop has no bounds checks and vectorizes: NHWC
pooling runs along the channels, cumulative sums along the row). Accumulators live in the
output tile, which stays in L1; each output element still sees its positions in order. A
scalar (rank-0) reduce-window is one fold in registers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter, emit_scalar_computation
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.llvm_types import load_element, store_element
from hlort.codegen.llvm.loops import emit_loop, emit_nest
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.codegen.llvm.window_index import emit_if, window_axes, window_positions
from hlort.ir.computation import Computation
from hlort.ir.shape_rules.convolution import dilated_bound
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.fusion_kernel import open_fusion_kernel
from hlort_cpu.codegen.hero_launch import HeroLaunch

ROW_TILE = 1024  # output elements of one row per outer iteration
code_settings.declare(__name__, "ROW_TILE")

Fold = Callable[[list[ir.Value], Index], list[ir.Value]]
Inits = Callable[[], list[ir.Value]]


def emit_reduce_window(
    module: ir.Module, target: TargetSpec, name: str, comp: Computation
) -> HeroLaunch:
    root = comp.root
    n = len(root.operands) // 2
    inputs, inits = root.operands[:n], root.operands[n:]
    reducer = root.attrs["to_apply"]
    _fn, b, ctx, params, outs, begin, end = open_fusion_kernel(module, target, name, comp, n)
    em = FusedEmitter(ctx, comp, params)

    def fold(accs: list[ir.Value], index: Index) -> list[ir.Value]:
        values = [em.value(x, index) for x in inputs]
        return emit_scalar_computation(ctx, reducer, accs + values)

    def init_values() -> list[ir.Value]:
        scalar = Index.scalar(b)
        return [em.value(i, scalar) for i in inits]

    emit = _emit_rows if root.shape.leaf_shapes()[0].rank else _emit_scalar
    launch = emit(b, em, comp, outs, fold, init_values, begin, end)
    b.ret_void()
    return launch


def _emit_rows(
    b: ir.IRBuilder,
    em: FusedEmitter,
    comp: Computation,
    outs: list[ir.Value],
    fold: Fold,
    init_values: Inits,
    begin: ir.Value,
    end: ir.Value,
) -> HeroLaunch:
    root = comp.root
    shapes = tuple(root.shape.leaf_shapes())
    out_dims = shapes[0].dims
    in_dims = root.operands[0].shape.dims
    axes = window_axes(in_dims, out_dims, root.attrs["window"])
    last, outer_dims = out_dims[-1], out_dims[:-1]
    tiles = max(-(-last // ROW_TILE), 1)
    w = axes[-1].window
    bound = dilated_bound(axes[-1].size, w.base_dilation)
    sizes = [a.window.size for a in axes]

    def outer(o: ir.Value) -> None:
        em.reset()
        row = b.udiv(o, i64(tiles)) if tiles > 1 else o
        j0 = b.mul(b.urem(o, i64(tiles)), i64(ROW_TILE)) if tiles > 1 else i64(0)
        j1 = _smaller(b, b.add(j0, i64(ROW_TILE)), i64(last)) if tiles > 1 else i64(last)
        out_multi = delinearize(b, row, outer_dims)
        base = b.mul(row, i64(last))
        start = init_values()

        def set_init(j: ir.Value) -> None:
            for v, ptr, s in zip(start, outs, shapes, strict=True):
                store_element(b, s.dtype, v, ptr, b.add(base, j))

        emit_loop(b, j0, j1, set_init, "rw_init")

        def position(ks: list[ir.Value]) -> None:
            em.reset()
            ok, multi = window_positions(b, axes[:-1], out_multi, ks[:-1])

            def stretch() -> None:
                # base position p = j * stride - shift; 0 <= p < bound <=> first <= j < stop
                shift = b.sub(i64(w.padding_low), b.mul(ks[-1], i64(w.window_dilation)))
                up = b.sdiv(b.add(shift, i64(w.stride - 1)), i64(w.stride))
                first = b.select(b.icmp_signed(">", shift, i64(0)), up, i64(0))
                top = b.add(shift, i64(bound - 1))
                stop = b.select(
                    b.icmp_signed(">=", top, i64(0)),
                    b.add(b.sdiv(top, i64(w.stride)), i64(1)),
                    i64(0),
                )

                def lane(j: ir.Value) -> None:
                    em.reset()
                    k = b.add(base, j)
                    p = b.sub(b.mul(j, i64(w.stride)), shift)

                    def step(q: ir.Value) -> None:
                        accs = [
                            load_element(b, s.dtype, ptr, k)
                            for ptr, s in zip(outs, shapes, strict=True)
                        ]
                        new = fold(accs, Index(b, in_dims, multi=multi + [q]))
                        for v, ptr, s in zip(new, outs, shapes, strict=True):
                            store_element(b, s.dtype, v, ptr, k)

                    if w.base_dilation == 1:
                        step(p)
                        return
                    on_element = b.icmp_signed("==", b.srem(p, i64(w.base_dilation)), i64(0))
                    q = b.sdiv(p, i64(w.base_dilation))
                    emit_if(b, on_element, lambda: step(q), "rw_hole")

                emit_loop(b, _larger(b, first, j0), _smaller(b, stop, j1), lane, "rw_lane")

            emit_if(b, ok, stretch)

        emit_nest(b, sizes, position, "rw_win")

    emit_loop(b, begin, end, outer, "rw_rows")
    extent = math.prod(outer_dims) * tiles if math.prod(out_dims) else 0
    return HeroLaunch(shapes, extent, max(min(last, ROW_TILE) * math.prod(sizes), 1))


def _emit_scalar(
    b: ir.IRBuilder,
    em: FusedEmitter,
    comp: Computation,
    outs: list[ir.Value],
    fold: Fold,
    init_values: Inits,
    begin: ir.Value,
    end: ir.Value,
) -> HeroLaunch:
    """A rank-0 reduce-window: its one window is its one element, folded from the init."""
    root = comp.root
    shapes = tuple(root.shape.leaf_shapes())

    def element(_o: ir.Value) -> None:
        em.reset()
        new = fold(init_values(), Index.scalar(b))
        for v, ptr, s in zip(new, outs, shapes, strict=True):
            store_element(b, s.dtype, v, ptr, i64(0))

    emit_loop(b, begin, end, element, "rw_scalar")
    return HeroLaunch(shapes, 1, 1)


def _smaller(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _larger(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed(">", x, y), x, y)
