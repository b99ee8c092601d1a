"""How each op is partitioned: given its operands' shardings, the per-device code and the
sharding of its result (GSPMD's propagation and partitioning, forward, one op at a time).

A rule reshards operands to what it needs (no communication from a replicated value; an
all-gather otherwise), emits the op at the tile shapes, and adds the collective the op needs (a
reduction or a dot over a cut dimension ends in an all-reduce of partial results). It raises
:class:`CannotPartition` with the reason when the op cannot run on tiles; the pass then runs it
whole on every device.

Supported: elementwise ops; broadcast, transpose; reshape where each cut dimension maps to one
dimension with the same elements before it; reduce (a cut reduced dimension ends in an
all-reduce with the reducer, when the init is its identity); dot (batch-, row- and
column-parallel, and a contracting split ending in an all-reduce); convolution cut along the
batch; gather cut along the indices' batch dimensions (and batched gathers along the batching
dimensions); batched scatter along the batching dimensions; slice, pad, reverse, concatenate,
sort, reduce-window, dynamic-slice and dynamic-update-slice that leave the cut dimensions alone;
tuples.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from hlort.ir import attributes as A
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.sharding import HloSharding
from hlort.lazy_dataclass import dataclass
from hlort.passes.spmd_reshard import CannotPartition, SpmdEmitter, derive, local_shape
from hlort.shape import ArrayShape


@dataclass(frozen=True)
class PValue:
    """An instruction of the per-device program and how its global value is laid out."""

    local: Instruction
    sharding: HloSharding


Rule = Callable[[SpmdEmitter, Instruction, list[PValue]], PValue]
RULES: dict[Opcode, Rule] = {}


def rule(*opcodes: Opcode):
    def register(fn: Rule) -> Rule:
        for op in opcodes:
            RULES[op] = fn
        return fn

    return register


def tiles(s: HloSharding) -> int:
    return math.prod(s.tile_counts) if s.is_tiled else 1


def to(e: SpmdEmitter, v: PValue, dst: HloSharding, global_instr: Instruction) -> Instruction:
    """``v`` resharded to ``dst``."""
    return e.reshard(v.local, v.sharding, dst, global_instr.shape)


def emit(
    e: SpmdEmitter, instr: Instruction, operands: list[Instruction], sharding: HloSharding, **attrs
) -> PValue:
    """``instr`` on tiles: the same op and attributes (``attrs`` override) at the tile shape."""
    check_even(instr, sharding)
    merged = {**instr.attrs, **attrs}
    shape = local_shape(instr.shape, sharding)
    return PValue(e.b.op(instr.opcode, operands, shape, **merged), sharding)


def check_even(instr: Instruction, sharding: HloSharding) -> None:
    shape = instr.shape
    if isinstance(shape, ArrayShape) and sharding.is_tiled:
        sharding.check_rank(shape.rank, f"{instr.opcode.value} {instr.name}")
        if not sharding.evenly_divides(shape.dims):
            raise CannotPartition(
                f"dims {list(shape.dims)} are not divisible by the tiles "
                f"{list(sharding.tile_counts)} of {sharding}"
            )


def most_tiled(values: list[PValue], rank: int) -> HloSharding:
    best = HloSharding.replicate()
    for v in values:
        if v.sharding.is_tiled and v.sharding.data_rank == rank and tiles(v.sharding) > tiles(best):
            best = v.sharding
    return best


# -- elementwise and layout ops ------------------------------------------------------------------
def elementwise(e: SpmdEmitter, instr: Instruction, ops: list[PValue]) -> PValue:
    rank = instr.shape.rank
    target = most_tiled(ops, rank)
    check_even(instr, target)
    locals_ = [  # clamp's scalar bounds stay whole
        to(e, v, target if o.shape.rank == rank else HloSharding.replicate(), o)
        for v, o in zip(ops, instr.operands, strict=True)
    ]
    return emit(e, instr, locals_, target)


@rule(Opcode.BROADCAST)
def _broadcast(e, instr, ops):
    (v,) = ops
    dims = instr.attrs["dimensions"]
    mapping = [dims.index(j) if j in dims else None for j in range(instr.shape.rank)]
    return emit(e, instr, [v.local], derive(v.sharding, mapping))


@rule(Opcode.TRANSPOSE)
def _transpose(e, instr, ops):
    (v,) = ops
    return emit(e, instr, [v.local], derive(v.sharding, list(instr.attrs["dimensions"])))


@rule(Opcode.COPY, Opcode.OPTIMIZATION_BARRIER)
def _identity_like(e, instr, ops):
    (v,) = ops
    return emit(e, instr, [v.local], v.sharding)


@rule(Opcode.RESHAPE)
def _reshape(e, instr, ops):
    (v,) = ops
    s = v.sharding
    if not s.is_tiled:
        return emit(e, instr, [v.local], s)
    src = instr.operands[0].shape.dims
    dst = instr.shape.dims
    mapping: list[int | None] = [None] * len(dst)
    for axis, t in enumerate(s.tile_counts):
        if t == 1:
            continue
        before = math.prod(src[:axis])
        target = [j for j in range(len(dst)) if math.prod(dst[:j]) == before and dst[j] % t == 0]
        if not target or src[axis] % t or mapping[target[0]] is not None:
            raise CannotPartition(
                f"reshape {list(src)} -> {list(dst)} splits or merges dimension {axis}, which is "
                f"cut in {t}"
            )
        mapping[target[0]] = axis
    return emit(e, instr, [v.local], derive(s, mapping))


def _untouched(e, instr, ops, touched: set[int], **attrs) -> PValue:
    """Ops that move data only along ``touched`` dims keep a sharding that leaves them uncut."""
    v = ops[0]
    if v.sharding.is_tiled and any(v.sharding.tile_counts[d] > 1 for d in touched):
        raise CannotPartition(f"it rearranges dimension(s) {sorted(touched)}, which are cut")
    rest = [
        to(e, w, HloSharding.replicate(), o)
        for w, o in zip(ops[1:], instr.operands[1:], strict=True)
    ]
    return emit(e, instr, [v.local, *rest], v.sharding, **attrs)


@rule(Opcode.SLICE)
def _slice(e, instr, ops):
    dims = instr.operands[0].shape.dims
    touched = {
        d
        for d, s in enumerate(instr.attrs["slice"])
        if (s.start, s.limit, s.stride) != (0, dims[d], 1)
    }
    local = local_shape(instr.operands[0].shape, ops[0].sharding).dims
    whole = tuple(
        s if d in touched else A.SliceDim(0, local[d], 1)
        for d, s in enumerate(instr.attrs["slice"])
    )
    return _untouched(e, instr, ops, touched, slice=whole)


@rule(Opcode.PAD)
def _pad(e, instr, ops):
    pads = instr.attrs["padding"]
    touched = {d for d, p in enumerate(pads) if (p.low, p.high, p.interior) != (0, 0, 0)}
    return _untouched(e, instr, ops, touched)


@rule(Opcode.REVERSE)
def _reverse(e, instr, ops):
    return _untouched(e, instr, ops, set(instr.attrs["dimensions"]))


@rule(Opcode.SORT)
def _sort(e, instr, ops):
    if len(ops) != 1:
        raise CannotPartition("a sort of several operands (variadic)")
    return _untouched(e, instr, ops, set(instr.attrs["dimensions"]))


@rule(Opcode.REDUCE_WINDOW)
def _reduce_window(e, instr, ops):
    if len(ops) != 2:
        raise CannotPartition("a reduce-window of several operands (variadic)")
    trivial = (1, 1, 0, 0, 1, 1, False)
    touched = {
        d
        for d, w in enumerate(instr.attrs["window"])
        if (
            w.size,
            w.stride,
            w.padding_low,
            w.padding_high,
            w.window_dilation,
            w.base_dilation,
            w.window_reversal,
        )
        != trivial
    }
    return _untouched(e, instr, ops, touched)


def _starts(e, starts: list[PValue], originals, cut: set[int]) -> list[Instruction]:
    """Start indices: a cut dimension is taken whole, so it starts at 0 on every device."""
    out = []
    for d, (start, original) in enumerate(zip(starts, originals, strict=True)):
        if d in cut:
            out.append(e.b.constant(np.zeros((), original.shape.dtype.numpy)))
        else:
            out.append(to(e, start, HloSharding.replicate(), original))
    return out


@rule(Opcode.DYNAMIC_SLICE)
def _dynamic_slice(e, instr, ops):
    v, starts = ops[0], ops[1:]
    dims = instr.operands[0].shape.dims
    sizes = instr.attrs["dynamic_slice_sizes"]
    touched = {d for d in range(len(dims)) if sizes[d] != dims[d]}
    s = v.sharding
    if s.is_tiled and any(s.tile_counts[d] > 1 for d in touched):
        raise CannotPartition(f"it slices dimension(s) {sorted(touched)}, which are cut")
    cut = {d for d, t in enumerate(s.tile_counts) if t > 1} if s.is_tiled else set()
    local = local_shape(instr.operands[0].shape, s).dims
    new_sizes = tuple(local[d] if d in cut else sizes[d] for d in range(len(dims)))
    return emit(
        e,
        instr,
        [v.local, *_starts(e, starts, instr.operands[1:], cut)],
        s,
        dynamic_slice_sizes=new_sizes,
    )


@rule(Opcode.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(e, instr, ops):
    v, update, starts = ops[0], ops[1], ops[2:]
    dims = instr.operands[0].shape.dims
    u_dims = instr.operands[1].shape.dims
    touched = {d for d in range(len(dims)) if u_dims[d] != dims[d]}
    s = v.sharding
    if s.is_tiled and any(s.tile_counts[d] > 1 for d in touched):
        raise CannotPartition(f"it updates part of dimension(s) {sorted(touched)}, which are cut")
    cut = {d for d, t in enumerate(s.tile_counts) if t > 1} if s.is_tiled else set()
    u = to(e, update, s, instr.operands[1])
    return emit(e, instr, [v.local, u, *_starts(e, starts, instr.operands[2:], cut)], s)


@rule(Opcode.CONCATENATE)
def _concatenate(e, instr, ops):
    dim = instr.attrs["dimensions"][0]
    target = most_tiled(ops, instr.shape.rank)
    if target.is_tiled and target.tile_counts[dim] > 1:
        raise CannotPartition(f"it concatenates along dimension {dim}, which is cut")
    locals_ = [to(e, v, target, o) for v, o in zip(ops, instr.operands, strict=True)]
    return emit(e, instr, locals_, target)


# -- reductions ---------------------------------------------------------------------------------
_IDENTITIES = {
    Opcode.ADD: lambda dt: 0,
    Opcode.OR: lambda dt: 0,
    Opcode.MULTIPLY: lambda dt: 1,
    Opcode.MAXIMUM: lambda dt: -np.inf if dt.is_floating_or_complex else _int_range(dt)[0],
    Opcode.MINIMUM: lambda dt: np.inf if dt.is_floating_or_complex else _int_range(dt)[1],
}


def _int_range(dt):
    if dt.is_pred:
        return (0, 1)
    info = np.iinfo(dt.numpy)
    return (info.min, info.max)


def reducer_identity_ok(reducer, init: Instruction) -> bool:
    """The reducer is one binary op of its two parameters and ``init`` a constant equal to that
    op's identity (so partial reductions on every device, then combined, count it once)."""
    root = reducer.root
    if root is None or root.opcode not in _IDENTITIES or len(reducer.instructions) != 3:
        return False
    if {o.opcode for o in root.operands} != {Opcode.PARAMETER} or init.opcode is not (
        Opcode.CONSTANT
    ):
        return False
    if root.opcode is Opcode.AND:
        return False
    value = np.asarray(init.literal)
    identity = _IDENTITIES[root.opcode](init.shape.dtype)
    return value.shape == () and bool(value == identity)


@rule(Opcode.REDUCE)
def _reduce(e, instr, ops):
    if len(ops) != 2:
        raise CannotPartition("a reduce of several operands (variadic)")
    v, init = ops
    s = v.sharding
    reduced = list(instr.attrs["dimensions"])
    kept = [d for d in range(instr.operands[0].shape.rank) if d not in reduced]
    out = derive(s, kept)
    cut = [d for d in reduced if s.is_tiled and s.tile_counts[d] > 1]
    if cut and not reducer_identity_ok(instr.to_apply, instr.operands[1]):
        raise CannotPartition(
            "it reduces a cut dimension and its init value is not the reducer's identity"
        )
    init_local = to(e, init, HloSharding.replicate(), instr.operands[1])
    partial = emit(e, instr, [v.local, init_local], out)
    if not cut:
        return partial
    total = e.all_reduce(partial.local, s.device_groups_along(cut), instr.to_apply)
    return PValue(total, out)


# -- dot ----------------------------------------------------------------------------------------
@rule(Opcode.DOT)
def _dot(e, instr, ops):
    lhs, rhs = ops
    dn: A.DotDimensionNumbers = instr.attrs["dot_dimension_numbers"]
    l_rank, r_rank = (o.shape.rank for o in instr.operands)
    lf = [d for d in range(l_rank) if d not in dn.lhs_batch_dims + dn.lhs_contracting_dims]
    rf = [d for d in range(r_rank) if d not in dn.rhs_batch_dims + dn.rhs_contracting_dims]
    lhs_primary = tiles(lhs.sharding) >= tiles(rhs.sharding)
    if lhs_primary:
        primary, p_dims, o_dims = (
            lhs.sharding,
            (dn.lhs_batch_dims, dn.lhs_contracting_dims, lf),
            (
                dn.rhs_batch_dims,
                dn.rhs_contracting_dims,
                rf,
            ),
        )
        o_rank = r_rank
    else:
        primary, p_dims, o_dims = (
            rhs.sharding,
            (dn.rhs_batch_dims, dn.rhs_contracting_dims, rf),
            (
                dn.lhs_batch_dims,
                dn.lhs_contracting_dims,
                lf,
            ),
        )
        o_rank = l_rank
    if not primary.is_tiled:  # both replicated
        return emit(e, instr, [lhs.local, rhs.local], HloSharding.replicate())
    (p_batch, p_contract, p_free), (o_batch, o_contract, o_free) = p_dims, o_dims
    # the other operand: cut like the primary along batch and contracting dims, whole otherwise
    other_map: list[int | None] = [None] * o_rank
    for k, d in enumerate(o_batch):
        other_map[d] = p_batch[k]
    for k, d in enumerate(o_contract):
        other_map[d] = p_contract[k]
    other = derive(primary, other_map)
    free_out: list[int | None] = [None] * len(o_free)
    out_map = list(p_batch) + (list(p_free) + free_out if lhs_primary else free_out + list(p_free))
    out = derive(primary, out_map)
    if lhs_primary:
        check_even(instr.operands[0], primary)
        check_even(instr.operands[1], other)
        operands = [lhs.local, to(e, rhs, other, instr.operands[1])]
    else:
        check_even(instr.operands[0], other)
        check_even(instr.operands[1], primary)
        operands = [to(e, lhs, other, instr.operands[0]), rhs.local]
    partial = emit(e, instr, operands, out)
    cut = [d for d in p_contract if primary.tile_counts[d] > 1]
    if not cut:
        return partial
    add = e.adder(instr.shape.dtype)
    return PValue(e.all_reduce(partial.local, primary.device_groups_along(cut), add), out)
