"""Canonical forms before fusion, as XLA's algebraic simplifier makes them: broadcasts sink.

Frameworks write "broadcast a row value" in several ways (JAX: ``broadcast_in_dim`` to
``[rows, 1]``, then to ``[rows, cols]``, which HLO spells broadcast -> reshape -> broadcast).
These rules give each such chain one form, so that fusion and the emitters see the same thing
whatever wrote it:

- reshape or transpose of a broadcast is one broadcast of the (squeezed) source, when the
  reshape only adds or drops size-1 dimensions; broadcast of an iota is an iota;
- an elementwise op whose operands are all broadcasts of the same dimensions (scalar broadcasts
  count as any) runs on the small shape and is broadcast after (``convert``, ``select`` with a
  broadcast predicate, ``divide(row, n)``...);
- a non-scalar constant whose elements are all equal is a broadcast of a scalar constant;
- ``maximum(x, -inf)`` and ``minimum(x, +inf)`` are ``x`` (also the integer extremes);
  ``select(p, true, false)`` is ``p`` and ``select(p, false, true)`` is ``not(p)``;
- a reduce over some size-1 dimensions reduces the others of the operand reshaped without them.

Each rule computes the same elements as the chain it replaces (NaN, infinities and signed zeros
included); none reassociates arithmetic.
"""

from __future__ import annotations

import numpy as np

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import OP_DEFS, Opcode
from hlort.passes.rewriter import Rewriter, splat
from hlort.shape import ArrayShape, squeeze_dims

_NOT_SUNK = frozenset({Opcode.MAP})


def _squeezed_source(x: Instruction, rw: Rewriter) -> Instruction:
    """``x`` without its size-1 dimensions (a reshape, or ``x`` itself when it has none)."""
    dims = squeeze_dims(x.shape.dims)
    if dims == x.shape.dims:
        return x
    return rw.make(Opcode.RESHAPE, [x], x.shape.with_dims(dims))


def _non_unit_positions(dims: tuple[int, ...]) -> list[int]:
    return [k for k, d in enumerate(dims) if d != 1]


# -- reshape / transpose of a broadcast; broadcast of an iota -------------------------------------
def reshape_of_broadcast(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """reshape(broadcast(x)) -> broadcast(squeeze(x)) when the reshape only adds or drops
    size-1 dimensions (the broadcast's big dimensions keep their order)."""
    b = instr.operands[0]
    if b.opcode is not Opcode.BROADCAST or not isinstance(instr.shape, ArrayShape):
        return None
    if squeeze_dims(b.shape.dims) != squeeze_dims(instr.shape.dims):
        return None
    x = b.operands[0]
    position = dict(
        zip(_non_unit_positions(b.shape.dims), _non_unit_positions(instr.shape.dims), strict=True)
    )
    dims = tuple(position[d] for k, d in enumerate(b.attrs["dimensions"]) if x.shape.dims[k] != 1)
    source = _squeezed_source(x, rw)
    return rw.make(Opcode.BROADCAST, [source], instr.shape, dimensions=dims)


def transpose_of_broadcast(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """transpose(broadcast(x, D), perm) -> broadcast(x, perm^-1 . D)."""
    b = instr.operands[0]
    if b.opcode is not Opcode.BROADCAST:
        return None
    perm = tuple(instr.attrs["dimensions"])
    inverse = {p: i for i, p in enumerate(perm)}
    dims = tuple(inverse[d] for d in b.attrs["dimensions"])
    if list(dims) != sorted(dims):
        return None  # the source would be read transposed: keep the explicit transpose
    return rw.make(Opcode.BROADCAST, [b.operands[0]], instr.shape, dimensions=dims)


def movement_of_scalar_broadcast(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """slice / reverse / dynamic-slice of a broadcast scalar is a broadcast of that scalar."""
    x = instr.operands[0]
    if x.opcode is not Opcode.BROADCAST or x.operands[0].shape.rank != 0:
        return None
    return rw.make(Opcode.BROADCAST, [x.operands[0]], instr.shape, dimensions=())


def broadcast_of_iota(instr: Instruction, rw: Rewriter) -> Instruction | None:
    x = instr.operands[0]
    if x.opcode is not Opcode.IOTA:
        return None
    dim = tuple(instr.attrs["dimensions"])[x.attrs["iota_dimension"]]
    return rw.make(Opcode.IOTA, [], instr.shape, iota_dimension=dim)


# -- elementwise ops of broadcasts ----------------------------------------------------------------
def elementwise_of_broadcasts(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """op(broadcast(a, D), broadcast(b, D), ...) -> broadcast(op(a, b, ...), D); broadcasts of
    scalars join any D (re-broadcast to the small shape)."""
    if instr.opcode in _NOT_SUNK or not instr.is_elementwise or not instr.operands:
        return None
    if not isinstance(instr.shape, ArrayShape) or instr.has_side_effect:
        return None
    if any(o.opcode is not Opcode.BROADCAST for o in instr.operands):
        return None
    full = [o for o in instr.operands if o.operands[0].shape.rank > 0]
    if full:
        dims = tuple(full[0].attrs["dimensions"])
        small = full[0].operands[0].shape.dims
        if any(
            tuple(o.attrs["dimensions"]) != dims or o.operands[0].shape.dims != small for o in full
        ):
            return None
    else:
        dims, small = (), ()
    if len(small) == instr.shape.rank:
        return None  # nothing smaller to compute on
    operands = []
    for o in instr.operands:
        source = o.operands[0]
        if source.shape.dims != small:
            source = rw.make(
                Opcode.BROADCAST, [source], source.shape.with_dims(small), dimensions=()
            )
        operands.append(source)
    inner = rw.make(instr.opcode, operands, instr.shape.with_dims(small), **instr.attrs)
    return rw.make(Opcode.BROADCAST, [inner], instr.shape, dimensions=dims)


def splat_constant(instr: Instruction, rw: Rewriter) -> Instruction | None:
    """A constant of several equal elements is a broadcast of a scalar constant."""
    if not isinstance(instr.shape, ArrayShape) or instr.shape.size <= 1:
        return None
    value = splat(instr)
    if value is None:
        return None
    scalar = rw.constant(np.asarray(value, instr.shape.dtype.numpy).reshape(()))
    return rw.make(Opcode.BROADCAST, [scalar], instr.shape, dimensions=())


# -- max/min with their identity, select of booleans ----------------------------------------------
def _extreme(value: np.ndarray, dt, lowest: bool) -> bool:
    if dt.is_float:
        v = float(np.asarray(value).astype(np.float64))
        return v == (-np.inf if lowest else np.inf)
    if dt.is_integer:
        info = np.iinfo(dt.numpy)
        return int(value) == (info.min if lowest else info.max)
    return False


def _bound_identity(lowest: bool):
    """maximum(x, lowest) -> x and minimum(x, highest) -> x (NaN still wins: it is x)."""

    def rule(instr: Instruction, rw: Rewriter) -> Instruction | None:
        dt = instr.shape.dtype
        for keep, other in (instr.operands, reversed(instr.operands)):
            value = splat(other)
            if value is not None and keep.shape == instr.shape and _extreme(value, dt, lowest):
                return keep
        return None

    return rule


def select_of_booleans(instr: Instruction, rw: Rewriter) -> Instruction | None:
    pred, on_true, on_false = instr.operands
    if not instr.shape.dtype.is_pred or pred.shape != instr.shape:
        return None
    t, f = splat(on_true), splat(on_false)
    if t is None or f is None or bool(t) == bool(f):
        return None
    return pred if bool(t) else rw.make(Opcode.NOT, [pred])


# -- reduce over size-1 dimensions ----------------------------------------------------------------
def reduce_of_unit_dims(instr: Instruction, rw: Rewriter) -> Instruction | None:
    n = len(instr.operands) // 2
    arrays, inits = instr.operands[:n], instr.operands[n:]
    dims = set(instr.attrs["dimensions"])
    source = arrays[0].shape.dims
    unit = {d for d in dims if source[d] == 1}
    if not unit or unit == dims:
        return None  # nothing to drop, or the all-size-1 case (a rule of its own)
    keep = [d for d in range(len(source)) if d not in unit]
    new_dims = tuple(keep.index(d) for d in sorted(dims - unit))
    reshaped = [
        rw.make(Opcode.RESHAPE, [a], a.shape.with_dims(tuple(source[d] for d in keep)))
        for a in arrays
    ]
    return rw.make(
        Opcode.REDUCE,
        [*reshaped, *inits],
        instr.shape,
        dimensions=new_dims,
        to_apply=instr.attrs["to_apply"],
    )


def _elementwise_table() -> dict[Opcode, tuple]:
    return {
        op: (elementwise_of_broadcasts,)
        for op, info in OP_DEFS.items()
        if info.elementwise and op not in _NOT_SUNK
    }


RULES: dict[Opcode, tuple] = {
    **_elementwise_table(),
    Opcode.RESHAPE: (reshape_of_broadcast,),
    Opcode.TRANSPOSE: (transpose_of_broadcast,),
    Opcode.BROADCAST: (broadcast_of_iota,),
    Opcode.SLICE: (movement_of_scalar_broadcast,),
    Opcode.REVERSE: (movement_of_scalar_broadcast,),
    Opcode.DYNAMIC_SLICE: (movement_of_scalar_broadcast,),
    Opcode.CONSTANT: (splat_constant,),
    Opcode.REDUCE: (reduce_of_unit_dims,),
}
RULES[Opcode.MAXIMUM] = (_bound_identity(lowest=True), *RULES.get(Opcode.MAXIMUM, ()))
RULES[Opcode.MINIMUM] = (_bound_identity(lowest=False), *RULES.get(Opcode.MINIMUM, ()))
RULES[Opcode.SELECT] = (select_of_booleans, *RULES.get(Opcode.SELECT, ()))
