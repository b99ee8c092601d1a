"""Native while loops: one LLVM function that runs a whole loop over already emitted kernels.

A loop whose condition and body are nothing but kernels, dots (a cblas gemm through a function
pointer) and in-place dynamic-update-slices (``while_steps``), plus tuples, get-tuple-elements,
parameters and constants, needs no interpreter between iterations. The caller plans, at compile
time, where every value lives: temporaries at fixed byte offsets in one scratch arena (on the
driver's stack, or, when ``arena_arg`` is set, the block that pointer argument points to;
aligned to ``ARENA_ALIGN``), the loop state, constants, the loop's input leaves and function
addresses as pointer arguments. This module emits the driver for such a plan:

    copy the init leaves into the state; loop { run the condition's steps; stop unless the
    predicate byte is set; run the body's steps; copy the next state into the state }; copy the
    state into the output leaves.

The driver has the kernels' ABI, ``void name(ptr* buffers, i64 begin, i64 end)`` (begin and end
unused; ``buffers`` holds the plan's pointer arguments), and is reentrant: each call has its own
arena. Kernels run single-threaded over their full range; their pointer tables are filled once,
before the loop, since nothing moves while it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import define_kernel
from hlort.codegen.llvm.llvm_types import I1, I8, I64, PTR
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort_cpu.codegen.small_gemm import SmallDot, emit_small_dot
from hlort_cpu.codegen.while_driver_pool import emit_pool_wake, emit_pooled_call, halves_table
from hlort_cpu.codegen.while_steps import (
    GemmCall,
    SliceUpdate,
    emit_gemm,
    emit_slice_update,
    intrinsic,
    memmove_fn,
    memset_fn,
)

ARENA_ALIGN = 64


@dataclass(frozen=True)
class BufferRef:
    """``offset`` bytes into pointer argument number ``arg``, or into the arena (``arg`` None)."""

    arg: int | None
    offset: int = 0


@dataclass(frozen=True)
class KernelCall:
    """Run kernel ``name`` over ``[0, extent)`` (then ``[extent, extent + 1)`` when split)."""

    name: str
    buffers: tuple[BufferRef, ...]
    extent: int
    split: bool = False
    pool: tuple[int, int] | None = None  # driver args (pool state, dispatch): two halves


@dataclass(frozen=True)
class ByteCopy:
    dst: BufferRef
    src: BufferRef
    size: int


Step = KernelCall | GemmCall | SmallDot | SliceUpdate


@dataclass(frozen=True)
class WhileDriverPlan:
    name: str
    arena_bytes: int
    enter: tuple[ByteCopy, ...]  # init leaves -> state
    condition: tuple[Step, ...]
    predicate: BufferRef  # one pred byte, valid after the condition's steps ran
    body: tuple[Step, ...]
    update: tuple[ByteCopy, ...]  # next state -> state, in order (swaps go through temporaries)
    leave: tuple[ByteCopy, ...]  # state -> output leaves
    arena_arg: int | None = None  # the arena is this pointer argument's block (None: stack)


@dataclass(frozen=True)
class DriverInfo:
    """What the compile cache keeps of a driver: its symbol (the plan is recomputed)."""

    name: str


def emit_while_driver(module: ir.Module, target: TargetSpec, plan: WhileDriverPlan) -> DriverInfo:
    """Add ``plan``'s driver to ``module``, which must already define every kernel it calls."""
    n_args = 1 + max(_arg_numbers(plan), default=-1)
    kernel = define_kernel(module, target, plan.name, n_args)
    fn, b, args = kernel.function, kernel.builder, kernel.buffers
    if plan.arena_arg is None:
        arena = b.alloca(ir.ArrayType(I8, max(plan.arena_bytes, 1)))
        arena.align = ARENA_ALIGN
    else:
        arena = args[plan.arena_arg]

    def pointer(ref: BufferRef) -> ir.Value:
        base = arena if ref.arg is None else args[ref.arg]
        if not ref.offset:
            return base
        return b.gep(base, [i64(ref.offset)], inbounds=True, source_etype=I8)

    def tables(steps: Sequence[Step]) -> list:
        out = []
        for step in steps:
            if not isinstance(step, KernelCall):
                out.append((None, None, step))
                continue
            table = b.alloca(ir.ArrayType(PTR, max(1, len(step.buffers))))
            for k, ref in enumerate(step.buffers):
                b.store(pointer(ref), b.gep(table, [i64(0), i64(k)], inbounds=True))
            if step.pool is not None:
                table = (table, halves_table(b, step.extent))
            out.append((module.get_global(step.name), table, step))
        return out

    memcpy = intrinsic(module, "llvm.memcpy.p0.p0.i64", [PTR, PTR, I64, I1])
    memmove, memset = memmove_fn(module), memset_fn(module)
    from hlort_cpu.codegen.jit import jit_engine

    vector_bits = jit_engine().target.vector_bits

    def copy(copies: Sequence[ByteCopy]) -> None:
        for c in copies:
            if c.size:
                b.call(memcpy, [pointer(c.dst), pointer(c.src), i64(c.size), ir.Constant(I1, 0)])

    def run(steps) -> None:
        for kernel, table, call in steps:
            if isinstance(call, GemmCall):
                emit_gemm(b, call, pointer, args, memset)
            elif isinstance(call, SmallDot):
                emit_small_dot(b, call, pointer, memset, vector_bits, args)
            elif isinstance(call, SliceUpdate):
                emit_slice_update(b, call, pointer, memmove)
            elif call.pool is not None:
                emit_pooled_call(b, args, call.pool, kernel, *table, call.extent)
            elif call.extent:  # an empty kernel never runs, its split tail neither
                b.call(kernel, [table, i64(0), i64(call.extent)])
                if call.split:
                    b.call(kernel, [table, i64(call.extent), i64(call.extent + 1)])

    condition = tables(plan.condition)
    body = tables(plan.body)
    predicate = pointer(plan.predicate)
    pools = [s.pool for s in (*plan.condition, *plan.body) if getattr(s, "pool", None)]
    if pools:
        emit_pool_wake(b, args, pools[0], f"{plan.name}_wake")
    copy(plan.enter)
    test_block = fn.append_basic_block("condition")
    body_block = fn.append_basic_block("body")
    exit_block = fn.append_basic_block("exit")
    b.branch(test_block)
    b.position_at_end(test_block)
    run(condition)
    go = b.icmp_unsigned("!=", b.load(predicate, typ=I8), ir.Constant(I8, 0))
    b.cbranch(go, body_block, exit_block)
    b.position_at_end(body_block)
    run(body)
    copy(plan.update)
    b.branch(test_block)
    b.position_at_end(exit_block)
    copy(plan.leave)
    b.ret_void()
    return DriverInfo(plan.name)


def _arg_numbers(plan: WhileDriverPlan) -> list[int]:
    refs = [plan.predicate]
    numbers = [] if plan.arena_arg is None else [plan.arena_arg]
    for step in (*plan.condition, *plan.body):
        if isinstance(step, KernelCall):
            refs += step.buffers
            numbers += list(step.pool or ())
        elif isinstance(step, GemmCall):
            refs += [step.a.ref, step.b.ref, step.c]
            numbers.append(step.function_arg)
        elif isinstance(step, SmallDot):
            refs += [step.a, step.b, step.c]
            numbers += list(step.pool or ())
        else:
            refs += [step.operand, step.update, *(ref for ref, _, _ in step.starts)]
    for c in (*plan.enter, *plan.update, *plan.leave):
        refs += [c.dst, c.src]
    return numbers + [r.arg for r in refs if r.arg is not None]
