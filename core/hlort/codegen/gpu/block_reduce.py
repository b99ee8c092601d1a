"""Combining per-thread partial results across a block: warp shuffles, then shared memory.

Each thread holds a list of values (one per operand of a variadic reduce) and a validity bit (a
thread that saw no element holds nothing: reducers need not have an identity). A butterfly of
cross-lane exchanges leaves every lane with its warp's combination, always combined in lane
order (lower lanes on the left), so every lane computes the same bits; lane 0 of each warp writes
its result to shared memory, and after one barrier every thread folds the warps' results in warp
order. Every thread ends with the block's result, so an epilogue can run on all threads.
"""

from __future__ import annotations

from collections.abc import Callable

import llvmlite.ir as ir

from hlort.codegen.gpu.gpu_target import I32, GpuTarget
from hlort.codegen.llvm.ir_context import IrContext

I1 = ir.IntType(1)
ALL_VALID = ir.Constant(I1, 1)  # pass as ``valid`` when every thread saw an element
Combine = Callable[[list[ir.Value], list[ir.Value]], list[ir.Value]]


def shuffle_value(target: GpuTarget, b: ir.IRBuilder, value: ir.Value, mask: int) -> ir.Value:
    """``value`` of lane ``lane ^ mask``, for any register type (split into 32-bit pieces)."""
    t = value.type
    if isinstance(t, (ir.LiteralStructType, ir.ArrayType)):
        out = ir.Constant(t, ir.Undefined)
        count = len(t.elements) if isinstance(t, ir.LiteralStructType) else t.count
        for k in range(count):
            part = shuffle_value(target, b, b.extract_value(value, k), mask)
            out = b.insert_value(out, part, k)
        return out
    if isinstance(t, ir.IntType):
        bits = t.width
        raw = value
    else:
        bits = {ir.FloatType: 32, ir.DoubleType: 64, ir.HalfType: 16}[type(t)]
        raw = b.bitcast(value, ir.IntType(bits))
    if bits <= 32:
        wide = b.zext(raw, I32) if bits < 32 else raw
        got = target.shuffle_xor(b, wide, mask)
        got = b.trunc(got, ir.IntType(bits)) if bits < 32 else got
    else:
        i64 = ir.IntType(64)
        lo = target.shuffle_xor(b, b.trunc(raw, I32), mask)
        hi = target.shuffle_xor(b, b.trunc(b.lshr(raw, ir.Constant(i64, 32)), I32), mask)
        got = b.or_(b.shl(b.zext(hi, i64), ir.Constant(i64, 32)), b.zext(lo, i64))
    return got if isinstance(t, ir.IntType) else b.bitcast(got, t)


def _combine_valid(
    b: ir.IRBuilder,
    combine: Combine,
    left: list[ir.Value],
    left_ok: ir.Value,
    right: list[ir.Value],
    right_ok: ir.Value,
) -> tuple[list[ir.Value], ir.Value]:
    both = combine(left, right)
    if left_ok is ALL_VALID and right_ok is ALL_VALID:
        return both, ALL_VALID
    out = [
        b.select(left_ok, b.select(right_ok, c, lv), rv)
        for c, lv, rv in zip(both, left, right, strict=True)
    ]
    return out, b.or_(left_ok, right_ok)


def block_combine(
    ctx: IrContext,
    target: GpuTarget,
    threads: int,
    values: list[ir.Value],
    valid: ir.Value,
    combine: Combine,
    name: str,
) -> tuple[list[ir.Value], ir.Value]:
    """Every thread's (values, valid) folded over the block of ``threads`` threads."""
    b = ctx.b
    lane_bits = target.warp_size
    tid = target.thread_index(b)
    lane = b.and_(tid, ir.Constant(I32, lane_bits - 1))
    width = min(threads, lane_bits)
    mask = width // 2
    while mask >= 1:
        others = [shuffle_value(target, b, v, mask) for v in values]
        upper = b.icmp_unsigned("!=", b.and_(lane, ir.Constant(I32, mask)), ir.Constant(I32, 0))
        left = [b.select(upper, o, v) for v, o in zip(values, others, strict=True)]
        right = [b.select(upper, v, o) for v, o in zip(values, others, strict=True)]
        if valid is ALL_VALID:
            left_ok = right_ok = ALL_VALID
        else:
            other_ok = b.trunc(target.shuffle_xor(b, b.zext(valid, I32), mask), I1)
            left_ok = b.select(upper, other_ok, valid)
            right_ok = b.select(upper, valid, other_ok)
        values, valid = _combine_valid(b, combine, left, left_ok, right, right_ok)
        mask //= 2
    warps = threads // lane_bits
    if warps <= 1:
        return values, valid
    module = b.module
    slots = []
    every = valid is ALL_VALID
    stored = values if every else [*values, b.zext(valid, ir.IntType(8))]
    for k, v in enumerate(stored):
        arr = ir.ArrayType(v.type, warps)
        gv = ir.GlobalVariable(
            module,
            arr,
            module.get_unique_name(f"{name}_warp{k}"),
            addrspace=target.shared_addrspace,
        )
        gv.linkage = "internal"
        gv.initializer = ir.Constant(arr, ir.Undefined)
        gv.align = 8
        slots.append(gv)
    warp = b.lshr(tid, ir.Constant(I32, lane_bits.bit_length() - 1))
    first = b.icmp_unsigned("==", lane, ir.Constant(I32, 0))
    with b.if_then(first):
        for gv, v in zip(slots, stored, strict=True):
            b.store(v, b.gep(gv, [ir.Constant(I32, 0), warp], inbounds=True))
    target.barrier(b)

    def load(w: int) -> tuple[list[ir.Value], ir.Value]:
        got = [
            b.load(b.gep(gv, [ir.Constant(I32, 0), ir.Constant(I32, w)], inbounds=True))
            for gv in slots
        ]
        if every:
            return got, ALL_VALID
        return got[:-1], b.trunc(got[-1], I1)

    values, valid = load(0)
    for w in range(1, warps):
        more, more_ok = load(w)
        values, valid = _combine_valid(b, combine, values, valid, more, more_ok)
    target.barrier(b)  # the next row's writes wait for every thread's reads
    return values, valid


__all__ = ["ALL_VALID", "block_combine", "shuffle_value"]
