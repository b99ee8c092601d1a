"""Scatter's update walk: every update row in row-major order of its scatter index, each row's
window in row-major order, exactly the order the interpreter applies them, so duplicate targets
combine in the same order and results match bit for bit.

A row whose window does not fit inside the operand is skipped as XLA skips it (one unsigned
compare per start: negative starts wrap to huge values). The update computation is inlined as
scalar code on ``(current..., update...)``; for an overwrite it reduces to a store. Target-neutral
and serial: the CPU runs it as its scatter kernel's last iteration (hlort_cpu.codegen.
scatter_kernel), a GPU may run it in one thread or replace it where the combiner allows atomics.
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
from hlort.codegen.llvm.window_index import emit_if
from hlort.ir.instruction import Instruction


def walk_scatter_updates(
    b: ir.IRBuilder, ctx: IrContext, em: FusedEmitter, root: Instruction, outs: list[ir.Value]
) -> None:
    """Apply every update of scatter ``root`` to the outputs at ``outs`` (already holding the
    operands), one after another in the interpreter's order; ``em`` generates the indices and
    updates. Emitted where the builder is, as straight serial loops."""
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
            current = [
                load_element(b, s.dtype, ptr, target) for ptr, s in zip(outs, shapes, strict=True)
            ]
            values = [em.value(u, where) for u in updates]
            new = emit_scalar_computation(ctx, combiner, current + values)
            for v, ptr, s in zip(new, outs, shapes, strict=True):
                store_element(b, s.dtype, v, ptr, target)

        emit_if(b, keep, lambda: emit_nest(b, window_sizes, element, "scatter_win"), "keep")

    emit_loop(b, i64(0), i64(math.prod(row_dims)), row, "scatter_rows")
