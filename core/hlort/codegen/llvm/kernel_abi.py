"""The kernel signature, owned here once: every kernel function of every schedule is made here.

Two forms (``TargetSpec.kernel_signature``):

- ``BUFFER_TABLE``: ``void name(ptr buffers, i64 begin, i64 end)``. ``buffers`` is a table of
  pointers, one per buffer (a fused computation's parameters in order, then its outputs, then
  any scratch its schedule asks for); ``[begin, end)`` is a range of the kernel's outer
  iterations, so a host thread pool splits the work without the kernel knowing threads.
- ``POINTER_ARGS``: ``void name(ptr addrspace(G) b0, ..., b(n-1))`` with G the target's global
  address space and its kernel calling convention (``ptx_kernel``, ``amdgpu_kernel``); the grid
  says which elements a thread computes, so there is no range.

:func:`define_kernel` declares the function, opens its entry block and returns the buffer
pointers and an :class:`IrContext` for the target, so a schedule only writes its loops.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import I64, PTR, VOID
from hlort.codegen.llvm.target_spec import KernelSignature, TargetSpec
from hlort.lazy_dataclass import dataclass


@dataclass
class KernelEntry:
    """A kernel function being emitted: its builder at the end of the entry block, the buffer
    pointers (loaded from the table, or the arguments) and, for BUFFER_TABLE, the range."""

    function: ir.Function
    builder: ir.IRBuilder
    ctx: IrContext
    buffers: list[ir.Value]
    begin: ir.Value | None = None
    end: ir.Value | None = None


def kernel_function_type(target: TargetSpec, n_buffers: int) -> ir.FunctionType:
    if target.kernel_signature is KernelSignature.BUFFER_TABLE:
        return ir.FunctionType(VOID, [PTR, I64, I64])
    space = target.pointer(target.address_spaces.global_memory)
    return ir.FunctionType(VOID, [space] * n_buffers)


def declare_kernel(module: ir.Module, target: TargetSpec, name: str, n_buffers: int) -> ir.Function:
    """The kernel function ``name`` with no body yet (calling convention and attributes set)."""
    fn = ir.Function(module, kernel_function_type(target, n_buffers), name)
    for attribute in target.kernel_attributes:
        fn.attributes.add(attribute)
    if target.kernel_calling_convention is not None:
        fn.calling_convention = target.kernel_calling_convention
    return fn


def define_kernel(
    module: ir.Module,
    target: TargetSpec,
    name: str,
    n_buffers: int,
    load_buffers: int | None = None,
) -> KernelEntry:
    """Declare kernel ``name`` over ``n_buffers`` buffers and open its entry block.

    ``load_buffers`` (BUFFER_TABLE only) loads just the first that many table entries, for a
    kernel that reads the rest itself (a while driver's argument table)."""
    fn = declare_kernel(module, target, name, n_buffers)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    ctx = IrContext(module, b, target)
    if target.kernel_signature is KernelSignature.BUFFER_TABLE:
        table, begin, end = fn.args
        count = n_buffers if load_buffers is None else load_buffers
        return KernelEntry(fn, b, ctx, buffer_table(b, table, count), begin, end)
    return KernelEntry(fn, b, ctx, list(fn.args))


def buffer_table(b: ir.IRBuilder, table: ir.Value, count: int) -> list[ir.Value]:
    """Load pointers 0..count-1 of a BUFFER_TABLE kernel's table, in order."""
    return [
        b.load(b.gep(table, [i64(k)], inbounds=True, source_etype=PTR), typ=PTR)
        for k in range(count)
    ]


__all__ = ["KernelEntry", "buffer_table", "declare_kernel", "define_kernel", "kernel_function_type"]
