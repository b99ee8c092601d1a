"""Recognising masked attention for causal_attention.py: ``dot(rows(select(mask, f(dot(q, k)),
c)), v)`` where ``rows`` is any row computation of the masked scores (softmax), the mask is a
constant pattern that keeps a prefix of every row, and ``c`` the masked value.

Shapes: q [b..., Sq, dk], k [b..., Sk, dk], the scores [b..., Sq, Sk], v [b..., Sk, dv] (batch
dimensions leading, as ``jnp.einsum("...qd,...kd->...qk")`` lowers). The row computation is made
of elementwise ops on the scores' shape ("element" values), reduces of those over the last
dimension with an add, max or min reducer ("row" values, shape [b..., Sq]), elementwise ops on
row values, broadcasts of row values back along the last dimension, and broadcasts of scalars.
Every value of the region is used only inside it, so the rewrite may replace all of it.
"""

from __future__ import annotations

import math

import numpy as np

from hlort.errors import HlortError
from hlort.interpreter.evaluator import Evaluator
from hlort.interpreter.registry import function_for_instruction
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes

MAX_MASK_ELEMENTS = 1 << 24  # the mask is evaluated at compile time
REDUCERS = (Opcode.ADD, Opcode.MAXIMUM, Opcode.MINIMUM)
# narrow floats reduce in f32 in the interpreter (one rounding): not rewritten, nor reduced
FLOATS = ("f32", "f64")


class AttentionMatch:
    """What match_attention found (a plain class: no dataclass built at import)."""

    __slots__ = (
        "out",
        "p",
        "v",
        "scores",
        "select",
        "live_on_true",
        "mask",
        "masked_value",
        "prefix",
        "element",
        "row",
        "pre",
    )

    def __init__(self, **fields):
        # out: dot(p, v); scores: dot(q, k); select: the masked select, with the scores on its
        # on_true side when live_on_true; mask: the select's predicate, or the [Sq, Sk] pred it
        # broadcasts; masked_value: the scalar put in masked places; prefix: live elements at
        # the start of each row; element / row: the region from the select to p, by level;
        # pre: the elementwise ops between the scores dot and the select
        for name in self.__slots__:
            setattr(self, name, fields[name])


def _dims_ok(dot: Instruction, lhs_contract: int, rhs_contract: int) -> bool:
    dn = dot.attrs["dot_dimension_numbers"]
    rank = dot.shape.rank
    batch = tuple(range(rank - 2))
    return (
        rank >= 2
        and all(o.shape.is_array and o.shape.rank == rank for o in dot.operands)
        and tuple(dn.lhs_batch_dims) == batch
        and tuple(dn.rhs_batch_dims) == batch
        and tuple(dn.lhs_contracting_dims) == (lhs_contract,)
        and tuple(dn.rhs_contracting_dims) == (rhs_contract,)
    )


def scalar_broadcast(instr: Instruction) -> bool:
    return (
        instr.opcode is Opcode.BROADCAST
        and instr.operands[0].shape.is_array
        and instr.operands[0].shape.rank == 0
    )


def reducer_op(instr: Instruction) -> Opcode | None:
    if len(instr.operands) != 2 or instr.operands[1].shape.rank != 0:
        return None
    ops = variadic_reducer_opcodes(instr.attrs["to_apply"])
    return ops[0] if ops is not None and len(ops) == 1 and ops[0] in REDUCERS else None


class _Walk:
    def __init__(self, out: Instruction, users: dict[Instruction, list[Instruction]]):
        self.users = users
        self.elem_dims = out.operands[0].shape.dims
        self.row_dims = self.elem_dims[:-1]
        self.match_select: Instruction | None = None
        self.element: set[Instruction] = set()
        self.row: set[Instruction] = set()

    def level(self, instr: Instruction) -> str | None:
        if not instr.shape.is_array:
            return None
        if instr.shape.dims == self.elem_dims:
            return "element"
        if instr.shape.dims == self.row_dims:
            return "row"
        return None

    def visit(self, instr: Instruction) -> bool:
        """Walk back from ``instr`` (in the region); False when something does not fit."""
        if instr in self.element or instr in self.row or scalar_broadcast(instr):
            return True
        level = self.level(instr)
        if level is None:
            return False
        if level == "element" and instr.opcode is Opcode.SELECT and _is_mask_select(instr):
            if self.match_select is not None and self.match_select is not instr:
                return False  # one masked select
            self.match_select = instr
            self.element.add(instr)
            return True
        (self.element if level == "element" else self.row).add(instr)
        if instr.is_elementwise:
            return all(self.level(o) == level and self.visit(o) for o in instr.operands)
        if instr.opcode is Opcode.BROADCAST and level == "element":
            src = instr.operands[0]
            rank = len(self.elem_dims)
            return (
                tuple(instr.attrs["dimensions"]) == tuple(range(rank - 1))
                and self.level(src) == "row"
                and self.visit(src)
            )
        if instr.opcode is Opcode.REDUCE and level == "row":
            src = instr.operands[0]
            return (
                reducer_op(instr) is not None
                and instr.shape.dtype.name in FLOATS
                and tuple(instr.attrs["dimensions"]) == (len(self.elem_dims) - 1,)
                and self.level(src) == "element"
                and self.visit(src)
            )
        return False


def _is_mask_select(instr: Instruction) -> bool:
    _, a, b = instr.operands
    return scalar_broadcast(a) != scalar_broadcast(b)


def _evaluate_constant(root: Instruction) -> np.ndarray | None:
    """The interpreter's value of a subgraph with no parameters, or None."""
    evaluator = Evaluator()
    values: dict[Instruction, np.ndarray] = {}
    stack = [root]
    order: list[Instruction] = []
    seen: set[Instruction] = set()
    while stack:  # post order, iteratively
        instr = stack.pop()
        if instr in seen:
            order.append(instr)
            continue
        if not instr.shape.is_array or math.prod(instr.shape.dims) > MAX_MASK_ELEMENTS:
            return None
        if instr.opcode is Opcode.PARAMETER or instr.has_side_effect or instr.called_computations():
            return None
        seen.add(instr)
        stack.append(instr)
        stack.extend(o for o in instr.operands if o not in seen)
    try:
        with np.errstate(all="ignore"):
            for instr in order:
                if instr in values:
                    continue
                if instr.opcode is Opcode.CONSTANT:
                    values[instr] = np.asarray(instr.literal)
                    continue
                fn = function_for_instruction(instr)
                if fn is None:
                    return None
                values[instr] = np.asarray(
                    fn(evaluator, instr, *(values[o] for o in instr.operands))
                )
    except (HlortError, ValueError, TypeError, ArithmeticError):
        return None
    return values[root]


def _prefix(live: np.ndarray) -> np.ndarray | None:
    """Per row, how many leading elements are live, when every row is a live prefix."""
    rows, cols = live.shape
    prefix = np.where(live.all(axis=1), cols, np.argmin(live, axis=1)) if cols else np.zeros(rows)
    prefix = prefix.astype(np.int64)
    keep = np.arange(cols)[None, :] < prefix[:, None]
    return prefix if np.array_equal(keep, live) else None


def match_attention(out: Instruction, users: dict[Instruction, list[Instruction]], prefixes=None):
    """The AttentionMatch for ``out`` = dot(p, v), or None. ``prefixes``: a dict kept by the
    caller, the live prefixes (or None) of masks already read, keyed by (mask, live on true):
    the layers of a model share one mask, evaluated once."""
    if out.opcode is not Opcode.DOT or not _dims_ok(out, out.shape.rank - 1, out.shape.rank - 2):
        return None
    p, v = out.operands
    if not (p.shape.dtype.name == v.shape.dtype.name == out.shape.dtype.name in FLOATS):
        return None
    walk = _Walk(out, users)
    if not walk.visit(p) or walk.match_select is None or walk.level(p) != "element":
        return None
    select = walk.match_select
    pred, a, b = select.operands
    live_on_true = scalar_broadcast(b)
    scores_side, masked = (a, b) if live_on_true else (b, a)
    pre, scores = _pre_chain(scores_side, walk.elem_dims)
    if scores is None or not _dims_ok(scores, scores.shape.rank - 1, scores.shape.rank - 1):
        return None
    if scores.shape.dtype.name not in FLOATS:
        return None
    region = walk.element | walk.row | pre | {scores}
    for instr in region:
        if instr is p:
            if users.get(p, []) != [out]:
                return None
        elif any(u not in region for u in users.get(instr, [])):
            return None
    rank = out.shape.rank
    mask = pred
    if pred.opcode is Opcode.BROADCAST and tuple(pred.attrs["dimensions"]) == (rank - 2, rank - 1):
        mask = pred.operands[0]
    prefixes = {} if prefixes is None else prefixes
    key = (mask, live_on_true)
    if key not in prefixes:
        prefixes[key] = _mask_prefix(mask, live_on_true)
    prefix = prefixes[key]
    if prefix is None:
        return None
    return AttentionMatch(
        out=out,
        p=p,
        v=v,
        scores=scores,
        select=select,
        live_on_true=live_on_true,
        mask=mask,
        masked_value=masked.operands[0],
        prefix=prefix,
        element=walk.element,
        row=walk.row,
        pre=pre,
    )


def _mask_prefix(mask: Instruction, live_on_true: bool) -> np.ndarray | None:
    """The live prefix of every row of a constant mask the same in every batch element."""
    value = _evaluate_constant(mask)
    if value is None or value.size == 0:
        return None  # not constant, or no elements to read a pattern from
    value = value.reshape(-1, *value.shape[-2:]) if value.ndim > 2 else value
    if value.ndim == 3:
        if not (value == value[:1]).all():
            return None  # differs between batch elements
        value = value[0]
    if value.ndim != 2:
        return None
    live = value if live_on_true else ~value
    return _prefix(live.astype(bool))


def _pre_chain(instr: Instruction, dims) -> tuple[set[Instruction], Instruction | None]:
    """The elementwise ops (with scalar broadcasts) between the scores dot and the select."""
    chain: set[Instruction] = set()
    dot: Instruction | None = None
    stack = [instr]
    while stack:
        x = stack.pop()
        if x in chain or x is dot or scalar_broadcast(x):
            continue
        if not x.shape.is_array or x.shape.dims != dims:
            return chain, None
        if x.opcode is Opcode.DOT:
            if dot is not None:
                return chain, None
            dot = x
            continue
        if not x.is_elementwise:
            return chain, None
        chain.add(x)
        stack.extend(x.operands)
    return chain, dot
