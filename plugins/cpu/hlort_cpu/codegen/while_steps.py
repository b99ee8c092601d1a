"""Native while steps besides kernel calls: a cblas gemm through a function pointer, and an
in-place dynamic-update-slice.

A loop whose body holds a dot would otherwise go back to Python every trip. ``GemmCall`` calls
the row-major cblas gemm (``cblas_sgemm`` / ``cblas_dgemm``) whose address the caller passes as
a pointer argument: the object code names no symbol, so it is cached and loaded like any
kernel, and the caller decides which BLAS runs (the cpu plugin passes the one NumPy calls).
``int_bits`` is the BLAS's integer width (64 for ILP64 builds; the CBLAS enums stay 32-bit).

``SliceUpdate`` writes an update into a loop-state buffer in place (a scan's output stack),
copying only the update's bytes where a dynamic-update-slice kernel would rewrite the whole
operand every trip. Start indices of any integer type clamp to ``[0, dim - size]`` as XLA's
(and the interpreter's) rule says; unsigned ones compare unsigned, so huge values clamp high.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.llvm_types import F32, F64, I1, I8, I32, I64, PTR, VOID
from hlort.codegen.llvm.loops import emit_loop

CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS = 101, 111, 112


@dataclass(frozen=True)
class MatrixArg:
    """One gemm operand: ``ref`` (a BufferRef), its leading dimension, whether it is
    transposed, and the element stride between consecutive matrices of the batch."""

    ref: object
    ld: int
    trans: bool
    batch_stride: int


@dataclass(frozen=True)
class GemmCall:
    """``c[i] = a[i] @ b[i]`` for ``i < batch``: row-major [m, k] x [k, n] -> [m, n]."""

    function_arg: int  # the pointer argument holding the gemm's address
    double: bool  # dgemm (f64) or sgemm (f32)
    int_bits: int  # 32 (LP64) or 64 (ILP64)
    a: MatrixArg
    b: MatrixArg
    c: object  # BufferRef of the C-ordered [batch, m, n] result
    batch: int
    m: int
    n: int
    k: int


@dataclass(frozen=True)
class SliceUpdate:
    """dynamic-update-slice of ``update`` into ``operand``, in place."""

    operand: object  # BufferRef
    update: object  # BufferRef
    starts: tuple  # ((BufferRef, bits, signed), ...): one scalar start index per dimension
    operand_dims: tuple[int, ...]
    update_dims: tuple[int, ...]
    itemsize: int


Pointer = Callable[[object], ir.Value]


def emit_gemm(
    b: ir.IRBuilder, call: GemmCall, pointer: Pointer, args: list[ir.Value], memset: ir.Function
) -> None:
    """Emit ``call``: ``pointer`` turns a BufferRef into an address, ``args`` are the driver's
    pointer arguments."""
    real = F64 if call.double else F32
    size = 8 if call.double else 4
    c = pointer(call.c)
    if call.m * call.n * call.batch == 0:
        return
    if call.k == 0:  # no products: every sum is +0
        b.call(
            memset,
            [c, ir.Constant(I8, 0), i64(call.batch * call.m * call.n * size), ir.Constant(I1, 0)],
        )
        return
    index = ir.IntType(call.int_bits)
    fnty = ir.FunctionType(
        VOID, [I32, I32, I32, index, index, index, real, PTR, index, PTR, index, real, PTR, index]
    )
    # llvmlite calls through a pointer whose type names the function type (it prints as a
    # plain ptr); a same-type bitcast would be dropped, so round-trip through an integer
    gemm = b.inttoptr(b.ptrtoint(args[call.function_arg], I64), ir.PointerType(fnty))
    a, bm = pointer(call.a.ref), pointer(call.b.ref)

    def trans(arg: MatrixArg) -> ir.Constant:
        return ir.Constant(I32, CBLAS_TRANS if arg.trans else CBLAS_NO_TRANS)

    def one(i: ir.Value) -> None:
        def at(base: ir.Value, stride: int) -> ir.Value:
            if not stride:
                return base
            return b.gep(base, [b.mul(i, i64(stride * size))], inbounds=True, source_etype=I8)

        b.call(
            gemm,
            [
                ir.Constant(I32, CBLAS_ROW_MAJOR),
                trans(call.a),
                trans(call.b),
                ir.Constant(index, call.m),
                ir.Constant(index, call.n),
                ir.Constant(index, call.k),
                ir.Constant(real, 1.0),
                at(a, call.a.batch_stride),
                ir.Constant(index, call.a.ld),
                at(bm, call.b.batch_stride),
                ir.Constant(index, call.b.ld),
                ir.Constant(real, 0.0),
                at(c, call.m * call.n),
                ir.Constant(index, max(call.n, 1)),
            ],
        )

    if call.batch == 1:
        one(i64(0))
    else:
        emit_loop(b, i64(0), i64(call.batch), one, "gemm")


def emit_slice_update(
    b: ir.IRBuilder, step: SliceUpdate, pointer: Pointer, memmove: ir.Function
) -> None:
    """Emit ``step``: clamp the starts, then move the update's contiguous runs into place."""
    odims, udims = step.operand_dims, step.update_dims
    if math.prod(udims) == 0:
        return
    rank = len(odims)
    starts = [
        _clamped_start(b, pointer(ref), bits, signed, odims[d] - udims[d])
        for d, (ref, bits, signed) in enumerate(step.starts)
    ]
    # the run: dimensions from ``q`` on, where every later dimension is whole
    q = rank - 1 if rank else 0
    while q > 0 and udims[q] == odims[q]:
        q -= 1
    run = math.prod(udims[q:]) * step.itemsize
    ostrides = [math.prod(odims[d + 1 :]) for d in range(rank)]
    base = i64(0)
    for d in range(q, rank):
        base = b.add(base, b.mul(starts[d], i64(ostrides[d])))
    operand, update = pointer(step.operand), pointer(step.update)
    outer = udims[:q]

    def move(r: ir.Value) -> None:
        offset = base
        rest = r
        for d in reversed(range(q)):  # r -> (i_0, ..., i_{q-1}), innermost last
            digit = b.urem(rest, i64(outer[d])) if d else rest
            rest = b.udiv(rest, i64(outer[d])) if d else rest
            offset = b.add(offset, b.mul(b.add(starts[d], digit), i64(ostrides[d])))
        dst = b.gep(operand, [b.mul(offset, i64(step.itemsize))], inbounds=True, source_etype=I8)
        src = b.gep(update, [b.mul(r, i64(run))], inbounds=True, source_etype=I8)
        b.call(memmove, [dst, src, i64(run), ir.Constant(I1, 0)])

    runs = math.prod(outer)
    if runs == 1:
        move(i64(0))
    else:
        emit_loop(b, i64(0), i64(runs), move, "update")


def _clamped_start(b: ir.IRBuilder, ptr: ir.Value, bits: int, signed: bool, high: int) -> ir.Value:
    """The start index at ``ptr`` as i64, clamped to ``[0, high]``."""
    value = b.load(ptr, typ=ir.IntType(bits))
    if signed:
        wide = b.sext(value, I64) if bits < 64 else value
        wide = b.select(b.icmp_signed("<", wide, i64(0)), i64(0), wide)
        return b.select(b.icmp_signed(">", wide, i64(high)), i64(high), wide)
    wide = b.zext(value, I64) if bits < 64 else value
    return b.select(b.icmp_unsigned(">", wide, i64(high)), i64(high), wide)


def intrinsic(module: ir.Module, name: str, args: list) -> ir.Function:
    """``name`` declared once in ``module`` (llvm.memcpy / memmove / memset)."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(VOID, args), name)


def memmove_fn(module: ir.Module) -> ir.Function:
    return intrinsic(module, "llvm.memmove.p0.p0.i64", [PTR, PTR, I64, I1])


def memset_fn(module: ir.Module) -> ir.Function:
    return intrinsic(module, "llvm.memset.p0.i64", [PTR, I8, I64, I1])
