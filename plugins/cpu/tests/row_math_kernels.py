"""Kernels that compare two f32 math paths over many inputs, counting the results whose bits
differ, for test_row_math.py: exhaustive sweeps of bit patterns need no arrays (each input is
made from its loop index) and run vectorized, a few seconds for 2**31 inputs."""

from __future__ import annotations

import ctypes
from collections.abc import Callable

import llvmlite.ir as ir

from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import F32, I32, I64
from hlort.codegen.llvm.loops import emit_loop
from hlort_cpu.codegen.cpu_target import CPU_TARGET
from hlort_cpu.codegen.jit import jit_engine

Unary = Callable[[IrContext, ir.Value], ir.Value]
Binary = Callable[[IrContext, ir.Value, ir.Value], ir.Value]
_made = [0]


def _compile(module: ir.Module, name: str, argtypes: list) -> Callable:
    engine = jit_engine()
    address = engine.load_object(engine.compile_ir(str(module)), [name])[name]
    return ctypes.CFUNCTYPE(ctypes.c_int64, *argtypes)(address)


def _module(
    args: list[ir.Type], target=CPU_TARGET
) -> tuple[ir.Module, ir.Function, IrContext, str]:
    _made[0] += 1
    name = f"row_math_check_{_made[0]}"
    module = ir.Module(name)
    fn = ir.Function(module, ir.FunctionType(I64, args), name)
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    return module, fn, IrContext(module, b, target), name


def _count(ctx: IrContext, start, stop, body: Callable[[ir.Value], ir.Value]) -> None:
    """return the number of i in [start, stop) where body(i) (an i1) is true."""
    b = ctx.b
    acc = b.alloca(I64)
    b.store(ir.Constant(I64, 0), acc)

    def step(i: ir.Value) -> None:
        b.store(b.add(b.load(acc, typ=I64), b.zext(body(i), I64)), acc)

    emit_loop(b, start, stop, step, "check", 4)
    b.ret(b.load(acc, typ=I64))


def unary_sweep(reference: Unary, candidate: Unary, target=CPU_TARGET) -> Callable:
    """f(first, count, mask, step): how many bit patterns ``(first + i step) | mask`` (i <
    count) the two paths map to different bits (emitted for ``target``'s math policy)."""
    module, fn, ctx, name = _module([I32, I64, I32, I32], target)
    first, count, mask, step = fn.args
    b = ctx.b

    def differs(i: ir.Value) -> ir.Value:
        x = b.bitcast(b.or_(b.add(first, b.mul(b.trunc(i, I32), step)), mask), F32)
        u = b.bitcast(reference(ctx, x), I32)
        v = b.bitcast(candidate(ctx, x), I32)
        return b.icmp_unsigned("!=", u, v)

    _count(ctx, ir.Constant(I64, 0), count, differs)
    run = _compile(module, name, [ctypes.c_int32, ctypes.c_int64, ctypes.c_int32, ctypes.c_int32])
    return lambda first, count, mask, step=1: run(first, count, mask, step)


def binary_arrays(reference: Binary, candidate: Binary) -> Callable:
    """f(a, b, n): how many of the n pairs (a[i], b[i]) (f32 arrays) the two paths map to
    different bits."""
    ptr = ir.PointerType()
    module, fn, ctx, name = _module([ptr, ptr, I64])
    pa, pb, n = fn.args
    b = ctx.b

    def differs(i: ir.Value) -> ir.Value:
        x = b.load(b.gep(pa, [i], inbounds=True, source_etype=F32), typ=F32)
        y = b.load(b.gep(pb, [i], inbounds=True, source_etype=F32), typ=F32)
        u = b.bitcast(reference(ctx, x, y), I32)
        v = b.bitcast(candidate(ctx, x, y), I32)
        return b.icmp_unsigned("!=", u, v)

    _count(ctx, ir.Constant(I64, 0), n, differs)
    return _compile(module, name, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64])
