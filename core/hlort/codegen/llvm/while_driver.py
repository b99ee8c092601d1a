"""Native while loops: one LLVM function that runs a whole loop over already emitted kernels.

A loop whose condition and body are nothing but kernels (plus tuples, get-tuple-elements,
parameters and constants) needs no interpreter between iterations. The caller plans, at compile
time, where every value lives: the loop state and every temporary at fixed byte offsets in one
scratch arena on the driver's stack (``arena_bytes``, aligned to ``ARENA_ALIGN``), constants,
the loop's input leaves and its output block as pointer arguments. This module emits the driver
for such a plan:

    copy the init leaves into the state; loop { run the condition's kernels; stop unless the
    predicate byte is set; run the body's kernels; copy the next state into the state }; copy the
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
from hlort.codegen.llvm.kernel_builder import KernelInfo
from hlort.codegen.llvm.llvm_types import I1, I8, I64, PTR, VOID

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


@dataclass(frozen=True)
class ByteCopy:
    dst: BufferRef
    src: BufferRef
    size: int


@dataclass(frozen=True)
class WhileDriverPlan:
    name: str
    arena_bytes: int
    enter: tuple[ByteCopy, ...]  # init leaves -> state
    condition: tuple[KernelCall, ...]
    predicate: BufferRef  # one pred byte, valid after the condition's kernels ran
    body: tuple[KernelCall, ...]
    update: tuple[ByteCopy, ...]  # next state -> state, in order (swaps go through temporaries)
    leave: tuple[ByteCopy, ...]  # state -> output leaves


@dataclass(frozen=True)
class DriverInfo:
    """What the compile cache keeps of a driver: its symbol (the plan is recomputed)."""

    name: str


def emit_while_driver(module: ir.Module, plan: WhileDriverPlan) -> DriverInfo:
    """Add ``plan``'s driver to ``module``, which must already define every kernel it calls."""
    fn = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]), plan.name)
    fn.attributes.add("nounwind")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args_ptr = fn.args[0]
    n_args = 1 + max(_arg_numbers(plan), default=-1)
    args = [b.load(b.gep(args_ptr, [i64(k)], inbounds=True, source_etype=PTR), typ=PTR)
            for k in range(n_args)]  # fmt: skip
    arena = b.alloca(ir.ArrayType(I8, max(plan.arena_bytes, 1)))
    arena.align = ARENA_ALIGN

    def pointer(ref: BufferRef) -> ir.Value:
        base = arena if ref.arg is None else args[ref.arg]
        if not ref.offset:
            return base
        return b.gep(base, [i64(ref.offset)], inbounds=True, source_etype=I8)

    def tables(calls: Sequence[KernelCall]) -> list[tuple[ir.Function, ir.Value, KernelCall]]:
        out = []
        for call in calls:
            table = b.alloca(ir.ArrayType(PTR, max(1, len(call.buffers))))
            for k, ref in enumerate(call.buffers):
                b.store(pointer(ref), b.gep(table, [i64(0), i64(k)], inbounds=True))
            out.append((module.get_global(call.name), table, call))
        return out

    memcpy = _memcpy(module)

    def copy(copies: Sequence[ByteCopy]) -> None:
        for c in copies:
            if c.size:
                b.call(memcpy, [pointer(c.dst), pointer(c.src), i64(c.size), ir.Constant(I1, 0)])

    def run(calls) -> None:
        for kernel, table, call in calls:
            if call.extent:  # an empty kernel never runs, its split tail neither
                b.call(kernel, [table, i64(0), i64(call.extent)])
                if call.split:
                    b.call(kernel, [table, i64(call.extent), i64(call.extent + 1)])

    condition = tables(plan.condition)
    body = tables(plan.body)
    predicate = pointer(plan.predicate)
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
    for call in (*plan.condition, *plan.body):
        refs += call.buffers
    for c in (*plan.enter, *plan.update, *plan.leave):
        refs += [c.dst, c.src]
    return [r.arg for r in refs if r.arg is not None]


def _memcpy(module: ir.Module) -> ir.Function:
    name = "llvm.memcpy.p0.p0.i64"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64, I1]), name)


def load_entry_points(obj: bytes, infos: Sequence[KernelInfo | DriverInfo]) -> dict[str, object]:
    """Load object code once: a CompiledKernel per KernelInfo, a ctypes function per driver."""
    from hlort.codegen.llvm.compiled import KERNEL_CFUNC, CompiledKernel
    from hlort.codegen.llvm.jit import jit_engine

    addresses = jit_engine().load_object(obj, [info.name for info in infos])
    return {
        info.name: CompiledKernel(info, addresses[info.name]) if isinstance(info, KernelInfo)
        else KERNEL_CFUNC(addresses[info.name])
        for info in infos
    }
