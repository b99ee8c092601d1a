"""Full reductions (a whole large array to a scalar) split into per-chunk partials.

A plain row fusion runs such a reduce as one row on one core. Here outer iteration k < P
reduces chunk k into ``scratch[k]`` (threads take disjoint chunks) and the extra iteration P,
run after all chunks, combines the partials in order into the output. Only single-input
reduces with a plain reducer whose init is its identity are split: then each chunk may start
from init, and the only reassociation is the split into partial results (exact for ints,
max and min; float sums and products round differently).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir
import numpy as np

from hlort.codegen.llvm.fused_emitter import FusedEmitter
from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import load_element, store_element, value_type
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.row_fusion import apply_reducer, plan_row_fusion
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.interleave import interleave_for

SPLIT_CHUNK = 1 << 16  # elements per partial
code_settings.declare(__name__, "SPLIT_CHUNK")


def _identity(op: Opcode, dt) -> object | None:
    np_dt = dt.numpy
    if op in (Opcode.ADD, Opcode.OR, Opcode.XOR):
        return 0
    if op is Opcode.MULTIPLY:
        return 1
    if op is Opcode.AND:
        return -1 if dt.is_signed_integer else (np.iinfo(np_dt).max if dt.is_integer else None)
    if op in (Opcode.MAXIMUM, Opcode.MINIMUM):
        if dt.is_float:
            return -np.inf if op is Opcode.MAXIMUM else np.inf
        info = np.iinfo(np_dt)
        return info.min if op is Opcode.MAXIMUM else info.max
    return None


def split_reduce(comp: Computation) -> Instruction | None:
    """The reduce to split when ``comp`` is a large full reduce this module handles."""
    root = comp.root
    if root.opcode is not Opcode.REDUCE or len(root.operands) != 2 or root.shape.rank != 0:
        return None
    operand, init = root.operands
    dt = operand.shape.dtype
    if dt.is_pred or (dt.is_float and dt.bits < 32) or operand.shape.size < 2 * SPLIT_CHUNK:
        return None
    if plan_row_fusion(comp) is None or init.opcode is not Opcode.CONSTANT:
        return None
    ops = variadic_reducer_opcodes(root.attrs["to_apply"])
    if ops is None or len(ops) != 1:
        return None
    if dt.is_float and ops[0] not in (Opcode.ADD, Opcode.MULTIPLY, Opcode.MAXIMUM, Opcode.MINIMUM):
        return None
    ident = _identity(ops[0], dt)
    value = np.asarray(init.literal).reshape(-1)[0]
    if ident is None or not np.array_equal(
        np.asarray(value, dt.numpy), np.asarray(ident).astype(dt.numpy)
    ):
        return None
    return root


def emit_split_reduce(
    b: ir.IRBuilder,
    ctx: IrContext,
    comp: Computation,
    r: Instruction,
    params: list[ir.Value],
    out: ir.Value,
    scratch: ir.Value,
    begin: ir.Value,
    end: ir.Value,
) -> int:
    """Emit chunk iterations [0, P) and the combining iteration P; returns P."""
    operand, init = r.operands
    dims = operand.shape.dims
    n = math.prod(dims)
    parts = -(-n // SPLIT_CHUNK)
    dt = operand.shape.dtype
    em = FusedEmitter(ctx, comp, params)
    vt = value_type(dt)
    acc = b.alloca(vt)

    def outer(k: ir.Value) -> None:
        fn = b.block.function
        chunk, combine, done = (
            fn.append_basic_block(f"split.{s}") for s in ("chunk", "combine", "done")
        )
        b.cbranch(b.icmp_signed("<", k, i64(parts)), chunk, combine)
        b.position_at_end(chunk)
        em.reset()
        b.store(em.value(init, Index.scalar(b)), acc)
        start = b.mul(k, i64(SPLIT_CHUNK))
        stop = b.add(start, i64(SPLIT_CHUNK))
        stop = b.select(b.icmp_signed("<", stop, i64(n)), stop, i64(n))

        def step(i: ir.Value) -> None:
            em.reset()
            v = em.value(operand, Index(b, dims, linear=i))
            b.store(apply_reducer(ctx, r, [b.load(acc, typ=vt)], [v])[0], acc)

        emit_loop(b, start, stop, step, "chunk", interleave_for(min(n, SPLIT_CHUNK)))
        store_element(b, dt, b.load(acc, typ=vt), scratch, k)
        b.branch(done)
        b.position_at_end(combine)
        b.store(load_element(b, dt, scratch, i64(0)), acc)

        def fold(j: ir.Value) -> None:
            part = load_element(b, dt, scratch, j)
            b.store(apply_reducer(ctx, r, [b.load(acc, typ=vt)], [part])[0], acc)

        emit_loop(b, i64(1), i64(parts), fold, "fold")
        store_element(b, dt, b.load(acc, typ=vt), out, i64(0))
        b.branch(done)
        b.position_at_end(done)
        em.reset()

    emit_loop(b, begin, end, outer, "parts")
    return parts
