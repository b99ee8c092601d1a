"""Shape rules: broadcast, reshape, transpose, slice, dynamic-slice, dynamic-update-slice,
concatenate, pad, reverse.

The rules follow XLA's HLO verifier (not the looser client-side builders): broadcast maps every
operand dimension onto a result dimension of exactly the same size, and dynamic-slice takes one
scalar start index per dimension.
"""

from __future__ import annotations

from hlort.ir.attributes import PadDim, SliceDim
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.dimension_lists import check_dimension_list, integer_tuple
from hlort.shape import ArrayShape, Shape


def scalar_integer_operand(q: ShapeQuery, index: int, what: str) -> ArrayShape:
    """Operand ``index`` must be a scalar of an integer type (signed or unsigned)."""
    shape = q.array(index)
    if shape.dims or not shape.dtype.is_integer:
        q.fail(f"{what} (operand {index}) must be an integer scalar, got {shape}")
    return shape


@shape_rule(Opcode.BROADCAST)
def _broadcast(q: ShapeQuery) -> Shape:
    operand = q.array(0)
    result = q.need_declared_array()
    if result.dtype != operand.dtype:
        q.fail(f"result {result} must have the element type of operand {operand}")
    dims = integer_tuple(q, q.attr("dimensions"), "dimensions")
    if len(dims) != operand.rank:
        q.fail(f"dimensions={list(dims)} must have one entry per dimension of operand {operand}")
    of = f"result {result} of operand {operand}"
    dims = check_dimension_list(q, dims, result.rank, "dimensions", of)
    for i, d in enumerate(dims):
        if operand.dims[i] != result.dims[d]:
            q.fail(
                f"dimensions={list(dims)} maps operand dimension {i} (size {operand.dims[i]}) of "
                f"{operand} to result dimension {d} (size {result.dims[d]}) of {result}; sizes "
                "must be equal (reshape away size-1 dimensions first)"
            )
    return result


@shape_rule(Opcode.RESHAPE)
def _reshape(q: ShapeQuery) -> Shape:
    operand = q.array(0)
    result = q.need_declared_array()
    if result.dtype != operand.dtype:
        q.fail(f"result {result} must have the element type of operand {operand}")
    if result.size != operand.size:
        q.fail(
            f"cannot reshape {operand} ({operand.size} elements) to {result} "
            f"({result.size} elements)"
        )
    return result


@shape_rule(Opcode.BITCAST)
def _bitcast(q: ShapeQuery) -> Shape:
    """XLA's layout-level reshape: the operand's bytes, in its layout, read in the result's.
    The element type may change to one of the same width (XLA's optimized dumps bitcast
    f32 to s32 in sort comparators), as a bitcast-convert would."""
    operand = q.array(0)
    result = q.need_declared_array()
    if result.dtype != operand.dtype and result.dtype.bits != operand.dtype.bits:
        q.fail(
            f"bitcast result {result} must have an element type of the width of operand "
            f"{operand}'s ({operand.dtype.bits} bits; use bitcast-convert to change the width)"
        )
    if result.size != operand.size:
        q.fail(
            f"cannot bitcast {operand} ({operand.size} elements) to {result} "
            f"({result.size} elements)"
        )
    return result


@shape_rule(Opcode.TRANSPOSE)
def _transpose(q: ShapeQuery) -> Shape:
    operand = q.array(0)
    perm = integer_tuple(q, q.attr("dimensions"), "dimensions")
    if len(perm) != operand.rank:
        q.fail(
            f"dimensions={list(perm)} must be a permutation of the {operand.rank} "
            f"dimensions of {operand}"
        )
    perm = check_dimension_list(q, perm, operand.rank, "dimensions", f"operand {operand}")
    return operand.with_dims(operand.dims[p] for p in perm)


@shape_rule(Opcode.SLICE)
def _slice(q: ShapeQuery) -> Shape:
    operand = q.array(0)
    spec = q.attr("slice")
    if not isinstance(spec, (tuple, list)):
        q.fail(f"slice must be a tuple of SliceDim, got {spec!r}")
    if len(spec) != operand.rank:
        q.fail(f"slice has {len(spec)} entries; operand {operand} has rank {operand.rank}")
    dims = []
    for i, s in enumerate(spec):
        if not isinstance(s, SliceDim):
            q.fail(f"slice entry {i} must be a SliceDim, got {s!r}")
        size = operand.dims[i]
        if not 0 <= s.start <= s.limit <= size or s.stride < 1:
            q.fail(
                f"slice entry {i} [{s.start}:{s.limit}:{s.stride}] is invalid for dimension {i} "
                f"(size {size}) of {operand}; need 0 <= start <= limit <= size and stride >= 1"
            )
        dims.append(-(-(s.limit - s.start) // s.stride))
    return operand.with_dims(dims)


@shape_rule(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(q: ShapeQuery) -> Shape:
    if not q.operands:
        q.fail("takes an operand and one scalar start index per dimension, got no operands")
    operand = q.array(0)
    if len(q.operands) != 1 + operand.rank:
        q.fail(
            f"operand {operand} needs {operand.rank} scalar start indices, got "
            f"{len(q.operands) - 1}"
        )
    for i in range(operand.rank):
        scalar_integer_operand(q, 1 + i, f"start index {i}")
    sizes = integer_tuple(q, q.attr("dynamic_slice_sizes"), "dynamic_slice_sizes")
    if len(sizes) != operand.rank:
        q.fail(f"dynamic_slice_sizes={list(sizes)} must have one entry per dimension of {operand}")
    for i, (size, dim) in enumerate(zip(sizes, operand.dims, strict=True)):
        if not 0 <= size <= dim:
            q.fail(
                f"dynamic_slice_sizes={list(sizes)}: entry {i} must be in [0, {dim}] for "
                f"operand {operand}"
            )
    return operand.with_dims(sizes)


@shape_rule(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(q: ShapeQuery) -> Shape:
    if len(q.operands) < 2:
        q.fail(f"takes an operand, an update and start indices, got {len(q.operands)} operands")
    operand, update = q.array(0), q.array(1)
    if update.dtype != operand.dtype:
        q.fail(f"update {update} must have the element type of operand {operand}")
    if update.rank != operand.rank:
        q.fail(f"update {update} must have the rank of operand {operand}")
    if len(q.operands) != 2 + operand.rank:
        q.fail(
            f"operand {operand} needs {operand.rank} scalar start indices, got "
            f"{len(q.operands) - 2}"
        )
    for i in range(operand.rank):
        scalar_integer_operand(q, 2 + i, f"start index {i}")
    for i, (u, d) in enumerate(zip(update.dims, operand.dims, strict=True)):
        if u > d:
            q.fail(f"update {update} is larger than operand {operand} in dimension {i}")
    return operand


@shape_rule(Opcode.CONCATENATE)
def _concatenate(q: ShapeQuery) -> Shape:
    if not q.operands:
        q.fail("needs at least one operand")
    shapes = [q.array(i) for i in range(len(q.operands))]
    first = shapes[0]
    dims = integer_tuple(q, q.attr("dimensions"), "dimensions")
    if len(dims) != 1:
        q.fail(f"dimensions={list(dims)} must hold exactly one dimension")
    (dim,) = check_dimension_list(q, dims, first.rank, "dimensions", f"operand 0 {first}")
    total = 0
    for i, s in enumerate(shapes):
        if s.dtype != first.dtype or s.rank != first.rank:
            q.fail(f"operand {i} {s} must have the element type and rank of operand 0 {first}")
        for k in range(first.rank):
            if k != dim and s.dims[k] != first.dims[k]:
                q.fail(
                    f"operand {i} {s} differs from operand 0 {first} in dimension {k}; only "
                    f"the concatenated dimension {dim} may differ"
                )
        total += s.dims[dim]
    out = list(first.dims)
    out[dim] = total
    return first.with_dims(out)


@shape_rule(Opcode.PAD)
def _pad(q: ShapeQuery) -> Shape:
    operand, value = q.array(0), q.array(1)
    if value.dims or value.dtype != operand.dtype:
        q.fail(f"padding value {value} must be a scalar of the element type of {operand}")
    config = q.attr("padding")
    if not isinstance(config, (tuple, list)):
        q.fail(f"padding must be a tuple of PadDim, got {config!r}")
    if len(config) != operand.rank:
        q.fail(f"padding has {len(config)} entries; operand {operand} has rank {operand.rank}")
    dims = []
    for i, (p, size) in enumerate(zip(config, operand.dims, strict=True)):
        if not isinstance(p, PadDim):
            q.fail(f"padding entry {i} must be a PadDim, got {p!r}")
        if p.interior < 0:
            q.fail(f"padding entry {i} has negative interior padding {p.interior}")
        out = p.low + p.high + size + max(size - 1, 0) * p.interior
        if out < 0:
            q.fail(
                f"padding entry {i} ({p.low}_{p.high}_{p.interior}) makes dimension {i} of "
                f"{operand} negative ({out})"
            )
        dims.append(out)
    return operand.with_dims(dims)


@shape_rule(Opcode.REVERSE)
def _reverse(q: ShapeQuery) -> Shape:
    operand = q.array(0)
    check_dimension_list(q, q.attr("dimensions"), operand.rank, "dimensions", f"operand {operand}")
    return operand
