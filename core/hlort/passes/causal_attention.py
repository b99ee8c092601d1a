"""Causal attention in row blocks: only the live part of a masked score matrix is computed.

``out = dot(softmax(select(mask, dot(q, k) * scale, c)), v)`` with a causal mask computes the
whole [Sq, Sk] score matrix, then throws away the masked half. Split the query rows into
blocks; block ``[r0, r1)`` needs only the score columns ``[0, cut)`` where ``cut`` is the
longest live prefix among its rows (r1 for a causal mask). Every column ``j >= cut`` of the
block is masked, so every element value the row computation makes there is one value per row,
the same computation on ``c`` (its "tail value"). Hence, per block:

- the scores dot and the row computation run on ``[b..., r1 - r0, cut]`` (q's rows and k's
  first ``cut`` rows sliced, the mask sliced);
- each reduce of the row computation folds the tail in: ``max(r, tail)`` / ``min(r, tail)``,
  and ``r + (Sk - cut) * tail`` for a sum;
- ``out``'s rows are ``dot(p_block, v[:cut]) + p_tail * sum(v[cut:])``: the tail term is what the
  masked columns contribute (``p_tail`` is 0 whenever a row has a live score above ``c``, so it
  only keeps NaN/inf in ``v`` and all-masked rows exact); the sum of ``v``'s rows runs in f64
  on rows scaled by 2^-e (2^e > 2 * the tail's rows, undone after the product with
  ``p_tail``), so finite ``v`` cannot overflow it into an inf (or 0 * inf) that the full dot
  would not have made, f64 ``v`` included;

and the blocks are concatenated. With 4 blocks the dots and the row kernel do 62.5% of the
work. The result differs from the unblocked program only in summation order (the dots are
blocked, a tail of equal terms is one multiply), within the float tolerance of a dot or a
reduce. What is rewritten: causal_attention_match.py (f32/f64 only: narrow floats' reduces
round in the interpreter's own order). The rewrite is applied to its own blocks too, until no
block saves enough, so one run reaches the fixed point (the pass is idempotent).
"""

from __future__ import annotations

import numpy as np

from hlort.ir import attributes as A
from hlort.ir.computation import Computation, make_parameters
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes
from hlort.ir.shape_inference import infer_shape
from hlort.passes.causal_attention_match import (
    AttentionMatch,
    match_attention,
    reducer_op,
    scalar_broadcast,
)
from hlort.passes.dce import DeadCodeElimination
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.shape import array


def plan_blocks(
    prefix: np.ndarray, max_blocks: int, min_block_rows: int, min_saving: float, cols: int
) -> list[tuple[int, int, int]] | None:
    """[(r0, r1, cut)] row blocks, or None when blocking saves less than ``min_saving`` of the
    score matrix."""
    rows = len(prefix)
    n = min(max_blocks, rows // max(min_block_rows, 1))
    if n < 2 or cols == 0:
        return None
    bounds = [round(i * rows / n) for i in range(n + 1)]
    blocks = []
    for r0, r1 in zip(bounds, bounds[1:], strict=False):
        cut = max(1, int(prefix[r0:r1].max()))
        blocks.append((r0, r1, cut))
    work = sum((r1 - r0) * cut for r0, r1, cut in blocks)
    return blocks if 1 - work / (rows * cols) >= min_saving else None


class CausalAttentionBlocking(Pass):
    """Options: at most ``max_blocks`` row blocks of at least ``min_block_rows`` rows, applied
    when they skip at least ``min_saving`` of the score matrix."""

    name = "causal-attention-blocking"

    def __init__(self, max_blocks: int = 4, min_block_rows: int = 64, min_saving: float = 0.3):
        self.max_blocks = max_blocks
        self.min_block_rows = min_block_rows
        self.min_saving = min_saving

    def run(self, module: Module) -> bool:
        changed = False
        for comp in unfused_computations(module):
            refused: set[Instruction] = set()
            prefixes: dict = {}  # match_attention's masks read so far
            while self._rewrite_one(module, comp, refused, prefixes):
                changed = True
        if changed:
            DeadCodeElimination().run(module)
        return changed

    def _rewrite_one(self, module: Module, comp: Computation, refused, prefixes) -> bool:
        """Rewrite the first dot that matches and saves enough. A dot refused once stays
        refused (a rewrite only adds instructions and replaces its own output's uses), so it
        is not matched again, nor its mask evaluated again, after every other rewrite: with
        one attention per layer that was quadratic in the layers."""
        users = None
        for instr in comp.post_order():
            if instr.opcode is not Opcode.DOT or instr in refused:
                continue
            users = users or comp.users()
            if instr is not comp.root and not users.get(instr):
                continue  # dead (a dot this pass replaced)
            rows = instr.shape.dims[-2] if instr.shape.is_array and instr.shape.rank >= 2 else 0
            if min(self.max_blocks, rows // max(self.min_block_rows, 1)) < 2:
                continue  # too few rows for two blocks: not worth matching (nor the mask's value)
            m = match_attention(instr, users, prefixes)
            if m is None:
                refused.add(instr)
                continue
            sq, sk = m.p.shape.dims[-2:]
            blocks = plan_blocks(
                m.prefix, self.max_blocks, self.min_block_rows, self.min_saving, sk
            )
            if blocks is None or len(m.prefix) != sq:
                refused.add(instr)
                continue
            parts = [_Block(module, comp, m, *block).output() for block in blocks]
            out = _add(comp, Opcode.CONCATENATE, parts, dimensions=(m.out.shape.rank - 2,))
            comp.replace_all_uses(m.out, out)
            return True
        return False


def _add(comp: Computation, opcode: Opcode, operands, shape=None, **attrs) -> Instruction:
    result = infer_shape(opcode, [o.shape for o in operands], attrs, shape)
    return comp.add_instruction(Instruction(opcode, result, list(operands), attrs))


def _constant(comp: Computation, dtype: str, value) -> Instruction:
    literal = np.array(value, dtype=array(dtype).dtype.numpy)
    return comp.add_instruction(
        Instruction(Opcode.CONSTANT, array(dtype), (), name="constant", literal=literal)
    )


def _sum_f64(module: Module) -> Computation:
    for comp in module.computations:
        if (
            comp.name.startswith("causal_tail_sum")
            and variadic_reducer_opcodes(comp) == (Opcode.ADD,)
            and comp.parameters[0].shape.dtype.name == "f64"
        ):
            return comp
    comp = Computation("causal_tail_sum")
    module.add_computation(comp)
    a, b = make_parameters(comp, [array("f64"), array("f64")])
    comp.set_root(_add(comp, Opcode.ADD, [a, b]))
    return comp


class _Block:
    """The rows [r0, r1) of the match over score columns [0, cut)."""

    def __init__(self, module: Module, comp: Computation, m: AttentionMatch, r0, r1, cut):
        self.module, self.comp, self.m = module, comp, m
        self.r0, self.r1, self.cut = r0, r1, cut
        rank = m.out.shape.rank
        self.rank = rank
        batch = m.out.shape.dims[: rank - 2]
        self.sk = m.p.shape.dims[-1]
        self.tail = self.sk - cut
        self.elem_dims = (*batch, r1 - r0, cut)
        self.row_dims = (*batch, r1 - r0)
        self.elem: dict[Instruction, Instruction] = {}
        self.row: dict[Instruction, Instruction] = {}
        self.tails: dict[Instruction, Instruction] = {}

    def _slice(self, x: Instruction, dim: int, start: int, limit: int) -> Instruction:
        spec = tuple(
            A.SliceDim(start, limit, 1) if d == dim else A.SliceDim(0, n, 1)
            for d, n in enumerate(x.shape.dims)
        )
        return _add(self.comp, Opcode.SLICE, [x], slice=spec)

    def _splat(self, scalar: Instruction, dims) -> Instruction:
        return _add(
            self.comp, Opcode.BROADCAST, [scalar], array(scalar.shape.dtype, dims), dimensions=()
        )

    def _same_op(self, x: Instruction, operands: list[Instruction], dims) -> Instruction:
        """``x`` on block operands, its result of ``dims`` and ``x``'s type: a convert or a dot
        with a wider result type has a type its operands do not give."""
        return _add(self.comp, x.opcode, operands, x.shape.with_dims(dims), **x.attrs)

    def element(self, x: Instruction) -> Instruction:
        got = self.elem.get(x)
        if got is None:
            got = self.elem[x] = self._element(x)
        return got

    def _element(self, x: Instruction) -> Instruction:
        m, rank = self.m, self.rank
        if scalar_broadcast(x):
            return self._splat(x.operands[0], self.elem_dims)
        if x is m.scores:
            q, k = x.operands
            q = self._slice(q, rank - 2, self.r0, self.r1)
            k = self._slice(k, rank - 2, 0, self.cut)
            return self._same_op(x, [q, k], self.elem_dims)
        if x is m.select:
            last = m.mask.shape.rank - 1
            mask = self._slice(m.mask, last - 1, self.r0, self.r1)
            mask = self._slice(mask, last, 0, self.cut)
            if mask.shape.rank != rank:
                dims = array("pred", self.elem_dims)
                mask = _add(
                    self.comp, Opcode.BROADCAST, [mask], dims, dimensions=(rank - 2, rank - 1)
                )
            values = [self.element(o) for o in x.operands[1:]]
            return self._same_op(x, [mask, *values], self.elem_dims)
        if x.opcode is Opcode.BROADCAST:  # a row value along the row
            src = self.row_value(x.operands[0])
            dims = array(x.shape.dtype, self.elem_dims)
            return _add(self.comp, Opcode.BROADCAST, [src], dims, dimensions=x.attrs["dimensions"])
        return self._same_op(x, [self.element(o) for o in x.operands], self.elem_dims)

    def row_value(self, x: Instruction) -> Instruction:
        got = self.row.get(x)
        if got is None:
            got = self.row[x] = self._row_value(x)
        return got

    def _row_value(self, x: Instruction) -> Instruction:
        if scalar_broadcast(x):
            return self._splat(x.operands[0], self.row_dims)
        if x.opcode is not Opcode.REDUCE:
            return self._same_op(x, [self.row_value(o) for o in x.operands], self.row_dims)
        src, init = x.operands
        r = self._same_op(x, [self.element(src), init], self.row_dims)
        if not self.tail:
            return r
        tail = self.tail_value(src)
        op = reducer_op(x)
        if op is Opcode.ADD:
            count = self._splat(_constant(self.comp, x.shape.dtype.name, self.tail), self.row_dims)
            tail = _add(self.comp, Opcode.MULTIPLY, [tail, count])
        return _add(self.comp, op, [r, tail])

    def tail_value(self, x: Instruction) -> Instruction:
        """What element value ``x`` is in every masked column past ``cut``, per row."""
        got = self.tails.get(x)
        if got is None:
            got = self.tails[x] = self._tail_value(x)
        return got

    def _tail_value(self, x: Instruction) -> Instruction:
        if scalar_broadcast(x):
            return self._splat(x.operands[0], self.row_dims)
        if x is self.m.select:
            return self._splat(self.m.masked_value, self.row_dims)
        if x.opcode is Opcode.BROADCAST:
            return self.row_value(x.operands[0])
        return self._same_op(x, [self.tail_value(o) for o in x.operands], self.row_dims)

    def output(self) -> Instruction:
        m, rank, comp = self.m, self.rank, self.comp
        v = self._slice(m.v, rank - 2, 0, self.cut)
        out = self._same_op(m.out, [self.element(m.p), v], (*self.row_dims, m.out.shape.dims[-1]))
        if not self.tail:
            return out
        dtype = m.out.shape.dtype.name
        rest = self._slice(m.v, rank - 2, self.cut, self.sk)
        weight = self.tail_value(m.p)
        if dtype != "f64":
            rest = _add(comp, Opcode.CONVERT, [rest], rest.shape.with_dtype(array("f64").dtype))
            weight = _add(comp, Opcode.CONVERT, [weight], weight.shape.with_dtype(rest.shape.dtype))
        # 2^-e with 2^e > 2 * tail: finite f64 rows sum below half of f64's largest, and the
        # weight times that sum is scaled back (exactly, powers of two, in the normal range)
        e = self.tail.bit_length() + 1
        down = self._splat(_constant(comp, "f64", 2.0**-e), rest.shape.dims)
        rest = _add(comp, Opcode.MULTIPLY, [rest, down])
        zero = _constant(comp, "f64", 0.0)
        total = _add(
            comp,
            Opcode.REDUCE,
            [rest, zero],
            dimensions=(rank - 2,),
            to_apply=_sum_f64(self.module),
        )
        dims = array("f64", out.shape.dims)
        batch = tuple(range(rank - 2))
        w = _add(comp, Opcode.BROADCAST, [weight], dims, dimensions=(*batch, rank - 2))
        t = _add(comp, Opcode.BROADCAST, [total], dims, dimensions=(*batch, rank - 1))
        extra = _add(comp, Opcode.MULTIPLY, [w, t])
        extra = _add(
            comp, Opcode.MULTIPLY, [extra, self._splat(_constant(comp, "f64", 2.0**e), dims.dims)]
        )
        if dtype != "f64":
            extra = _add(comp, Opcode.CONVERT, [extra], out.shape)
        return _add(comp, Opcode.ADD, [out, extra])
