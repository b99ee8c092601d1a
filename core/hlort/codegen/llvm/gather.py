"""Gather as an index map of the elemental emitter, and the start-index arithmetic it shares.

An element of gather's result at output index ``out`` reads the operand at ``start + offset``:
the batch dimensions of ``out`` (those not in ``offset_dims``) pick a start vector from the
indices operand, each start is clamped to ``[0, dim - slice_size]`` as XLA clamps it (so no read
is ever out of bounds), batching dimensions copy their batch coordinate, and the offset
dimensions of ``out`` walk the slice. The indices may be any integer type; unsigned 64-bit
starts above int64's range clamp to the top like the interpreter's saturation.
"""

from __future__ import annotations

from typing import Protocol

import llvmlite.ir as ir

from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.llvm_types import I64, constant
from hlort.dtypes import DType
from hlort.ir.instruction import Instruction


class ElementSource(Protocol):
    """What gather needs of its caller (fused_emitter.FusedEmitter): the builder and the
    element of any instruction at an index."""

    b: ir.IRBuilder

    def value(self, instr: Instruction, index: Index) -> ir.Value: ...


def widen_index(b: ir.IRBuilder, value: ir.Value, dtype: DType) -> ir.Value:
    """An integer index of ``dtype`` as i64 (sign- or zero-extended)."""
    if value.type.width == 64:
        return value
    return b.sext(value, I64) if dtype.is_signed_integer else b.zext(value, I64)


def clamp_start(b: ir.IRBuilder, start: ir.Value, dtype: DType, highest: int) -> ir.Value:
    """``clip(start, 0, highest)`` for a widened start of ``dtype`` (unsigned: no lower clip)."""
    cmp = b.icmp_unsigned if dtype.is_unsigned_integer else b.icmp_signed
    start = b.select(cmp(">", start, i64(highest)), i64(highest), start)
    if dtype.is_unsigned_integer:
        return start
    return b.select(b.icmp_signed("<", start, i64(0)), i64(0), start)


def start_vector_index(
    b: ir.IRBuilder, batch: list[ir.Value], k: int, vector_dim: int, indices_rank: int
) -> list[ir.Value]:
    """The indices-array index of component ``k`` of the start vector at ``batch``."""
    if vector_dim == indices_rank:
        return list(batch)
    return batch[:vector_dim] + [i64(k)] + batch[vector_dim:]


def emit_gather(em: ElementSource, instr: Instruction, index: Index) -> ir.Value:
    """One element of ``instr`` (a gather) at ``index``."""
    b = em.b
    operand, indices = instr.operands
    dn = instr.attrs["gather_dimension_numbers"]
    sizes = tuple(instr.attrs["slice_sizes"])
    dims = operand.shape.dims
    if operand.shape.size == 0 or any(sizes[d] == 0 for d in dn.collapsed_slice_dims):
        return constant(instr.shape.dtype, 0)  # every slice is empty: the result is zeros
    out = index.multi
    offset_dims = set(dn.offset_dims)
    batch = [out[a] for a in range(len(out)) if a not in offset_dims]
    skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    window_dims = [d for d in range(len(dims)) if d not in skip]
    multi: list[ir.Value] = [i64(0)] * len(dims)
    for d, axis in zip(window_dims, dn.offset_dims, strict=True):
        multi[d] = out[axis]
    vector_dim = dn.index_vector_dim
    for d, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
        multi[d] = batch[idim - (idim > vector_dim)]
    idt = indices.shape.dtype
    for k, d in enumerate(dn.start_index_map):
        where = start_vector_index(b, batch, k, vector_dim, indices.shape.rank)
        raw = em.value(indices, Index(b, indices.shape.dims, multi=where))
        start = clamp_start(b, widen_index(b, raw, idt), idt, dims[d] - sizes[d])
        multi[d] = b.add(multi[d], start)
    return em.value(operand, Index(b, dims, multi=multi))
