"""Scatter kernels (variadic too): copy the operands, then walk the updates in order.

Outer iterations ``[0, P)`` copy chunks of the operands into the outputs (in parallel); the one
iteration ``P``, run after them (the runtime's "split" launch), walks the update rows serially in
row-major order of their scatter index, each row's window in row-major order, exactly the order
the interpreter applies them, so duplicate targets combine in the same order and results match
bit for bit. A row whose window does not fit inside the operand is skipped as XLA skips it (one
unsigned compare per start: negative starts wrap to huge values). The update computation is
inlined as scalar code on ``(current..., update...)``; for an overwrite it reduces to a store.
Serial on purpose: targets may repeat, and only the copy is provably safe to split.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter, emit_scalar_computation
from hlort.codegen.llvm.gather import start_vector_index, widen_index
from hlort.codegen.llvm.index import Index, delinearize, i64, linearize
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import load_element, store_element
from hlort.codegen.llvm.loops import emit_loop, emit_nest
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.codegen.llvm.window_index import emit_if
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort_cpu.codegen.fusion_kernel import open_fusion_kernel
from hlort_cpu.codegen.hero_launch import HeroLaunch

COPY_CHUNK = 1 << 16  # operand elements copied per parallel iteration


def emit_scatter(module: ir.Module, target: TargetSpec, name: str,
                 comp: Computation) -> HeroLaunch:  # fmt: skip
    root = comp.root
    n = (len(root.operands) - 1) // 2
    operands = root.operands[:n]
    shapes = tuple(root.shape.leaf_shapes())
    dims = shapes[0].dims
    total = math.prod(dims)
    parts = -(-total // COPY_CHUNK)
    _fn, b, ctx, params, outs, begin, end = open_fusion_kernel(module, target, name, comp, n)
    em = FusedEmitter(ctx, comp, params)

    def outer(k: ir.Value) -> None:
        fn = b.block.function
        copy, walk, done = (fn.append_basic_block(f"scatter.{s}") for s in ("copy", "walk", "done"))
        b.cbranch(b.icmp_signed("<", k, i64(parts)), copy, walk)
        b.position_at_end(copy)
        start = b.mul(k, i64(COPY_CHUNK))
        stop = b.add(start, i64(COPY_CHUNK))
        stop = b.select(b.icmp_signed("<", stop, i64(total)), stop, i64(total))

        def copy_one(j: ir.Value) -> None:
            em.reset()
            index = Index(b, dims, linear=j)
            for x, ptr, s in zip(operands, outs, shapes, strict=True):
                store_element(b, s.dtype, em.value(x, index), ptr, j)

        emit_loop(b, start, stop, copy_one, "scatter_copy")
        b.branch(done)
        b.position_at_end(walk)
        em.reset()
        _walk_updates(b, ctx, em, root, outs)
        b.branch(done)
        b.position_at_end(done)
        em.reset()

    emit_loop(b, begin, end, outer, "scatter_parts")
    b.ret_void()
    return HeroLaunch(shapes, parts, COPY_CHUNK, split=True)


def _walk_updates(b: ir.IRBuilder, ctx: IrContext, em: FusedEmitter, root: Instruction,
                  outs: list[ir.Value]) -> None:  # fmt: skip
    n = (len(root.operands) - 1) // 2
    indices, updates = root.operands[n], root.operands[n + 1 :]
    shapes = root.shape.leaf_shapes()
    dims = shapes[0].dims
    dn = root.attrs["scatter_dimension_numbers"]
    combiner = root.attrs["to_apply"]
    update_dims = updates[0].shape.dims
    window_axes = list(dn.update_window_dims)
    scatter_axes = [a for a in range(len(update_dims)) if a not in window_axes]
    row_dims = tuple(update_dims[a] for a in scatter_axes)
    point = set(dn.inserted_window_dims) | set(dn.input_batching_dims)
    window_dims = [d for d in range(len(dims)) if d not in point]
    window_sizes = [update_dims[a] for a in window_axes]
    fit = dict.fromkeys(range(len(dims)), 1)
    fit.update(zip(window_dims, window_sizes, strict=True))
    if any(fit[d] > dims[d] for d in fit) or not math.prod(row_dims) or not math.prod(window_sizes):
        return  # no window fits, or nothing to scatter: the outputs are the operands
    vector_dim = dn.index_vector_dim
    idt = indices.shape.dtype

    def row(r: ir.Value) -> None:
        em.reset()
        batch = delinearize(b, r, row_dims)
        base: list[ir.Value] = [i64(0)] * len(dims)
        keep = None
        for k, d in enumerate(dn.scatter_dims_to_operand_dims):
            where = start_vector_index(b, batch, k, vector_dim, indices.shape.rank)
            raw = em.value(indices, Index(b, indices.shape.dims, multi=where))
            start = widen_index(b, raw, idt)
            ok = b.icmp_unsigned("<=", start, i64(dims[d] - fit[d]))
            keep = ok if keep is None else b.and_(keep, ok)
            base[d] = start
        for d, idim in zip(dn.input_batching_dims, dn.scatter_indices_batching_dims, strict=True):
            base[d] = batch[idim - (idim > vector_dim)]

        def element(ws: list[ir.Value]) -> None:
            em.reset()
            multi = list(base)
            for d, w in zip(window_dims, ws, strict=True):
                multi[d] = b.add(multi[d], w)
            target = linearize(b, multi, dims)
            update_multi: list[ir.Value] = [i64(0)] * len(update_dims)
            for a, v in zip(scatter_axes, batch, strict=True):
                update_multi[a] = v
            for a, w in zip(window_axes, ws, strict=True):
                update_multi[a] = w
            where = Index(b, update_dims, multi=update_multi)
            current = [load_element(b, s.dtype, ptr, target)
                       for ptr, s in zip(outs, shapes, strict=True)]  # fmt: skip
            values = [em.value(u, where) for u in updates]
            new = emit_scalar_computation(ctx, combiner, current + values)
            for v, ptr, s in zip(new, outs, shapes, strict=True):
                store_element(b, s.dtype, v, ptr, target)

        emit_if(b, keep, lambda: emit_nest(b, window_sizes, element, "scatter_win"), "keep")

    emit_loop(b, i64(0), i64(math.prod(row_dims)), row, "scatter_rows")
