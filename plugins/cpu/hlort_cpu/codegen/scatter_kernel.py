"""Scatter kernels (variadic too): copy the operands, then walk the updates in order.

Outer iterations ``[0, P)`` copy chunks of the operands into the outputs (in parallel); the one
iteration ``P``, run after them (the runtime's "split" launch), walks the update rows serially
in the interpreter's order (hlort.codegen.llvm.scatter_walk), so duplicate targets combine in
the same order and results match bit for bit. Serial on purpose: targets may repeat, and only
the copy is provably safe to split.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter
from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.llvm_types import store_element
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.scatter_walk import walk_scatter_updates
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.ir.computation import Computation
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.fusion_kernel import open_fusion_kernel
from hlort_cpu.codegen.hero_launch import HeroLaunch

COPY_CHUNK = 1 << 16  # operand elements copied per parallel iteration
code_settings.declare(__name__, "COPY_CHUNK")


def emit_scatter(module: ir.Module, target: TargetSpec, name: str, comp: Computation) -> HeroLaunch:
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
        walk_scatter_updates(b, ctx, em, root, outs)
        b.branch(done)
        b.position_at_end(done)
        em.reset()

    emit_loop(b, begin, end, outer, "scatter_parts")
    b.ret_void()
    return HeroLaunch(shapes, parts, COPY_CHUNK, split=True)
