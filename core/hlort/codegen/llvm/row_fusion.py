"""Row fusions: reductions over trailing dimensions with their producers and consumers, per row.

The fusion pass puts softmax's max, exp and sum, or layernorm's two moments and rsqrt, in one
kInput fusion. Every reduce there reduces the same trailing dimensions of inputs of one shape D,
leaving "row" values of the kept shape K. Such a fusion runs as one loop over rows (split across
threads); inside a row, each reduce is one vectorized inner loop (in dependence order), row-level
consumers of the reduces are scalar code, and element-level outputs get one more inner loop.
Row values may take any shape that is K up to size-1 dimensions (JAX's ``[rows, 1]``), moving
between such shapes by reshapes, broadcasts and transposes that only relabel size-1 dimensions;
they flow to element-level code only through broadcasts that read the current row. So every
index asking for a row value names the current row, and a reduce's accumulator (and anything
computed from it per row) stands for its whole output.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.llvm.complex_values import add_reassociable
from hlort.codegen.llvm.float_math import exp_f32_nonpositive, quotient_by_reciprocal
from hlort.codegen.llvm.fused_emitter import (
    FusedEmitter,
    emit_scalar_computation,
    supports_instruction,
    supports_scalar_computation,
)
from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import NARROW
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes
from hlort.lazy_dataclass import dataclass
from hlort.shape import squeeze_dims


@dataclass
class RowPlan:
    reduces: list[Instruction]  # dependence order
    in_dims: tuple[int, ...]
    kept_dims: tuple[int, ...]
    reduced: list[int]  # trailing dimension numbers
    outputs: list[Instruction]
    row_level: set[Instruction]  # the instructions holding one value per row


def _order_preserving(instr: Instruction) -> bool:
    """A broadcast or transpose between shapes of one element count that keeps the order of the
    big (non-1) dimensions: the same linear index on both sides (a relabelling of 1s)."""
    src = instr.operands[0].shape.dims
    if instr.opcode is Opcode.BROADCAST:
        mapped = list(instr.attrs["dimensions"])
    elif instr.opcode is Opcode.TRANSPOSE:
        perm = list(instr.attrs["dimensions"])
        mapped = [perm.index(j) for j in range(len(src))]
    else:
        return instr.opcode is Opcode.RESHAPE
    big = [m for j, m in enumerate(mapped) if src[j] != 1]
    return math.prod(src) == instr.shape.size and big == sorted(big)


def _row_broadcast(instr: Instruction, in_dims: tuple[int, ...], kept: tuple[int, ...]) -> bool:
    """broadcast(row value) to the input shape that reads the current row at every element."""
    src = instr.operands[0].shape.dims
    big = [m for j, m in enumerate(instr.attrs["dimensions"]) if src[j] != 1]
    return big == [d for d in range(len(kept)) if in_dims[d] != 1]


def _levels(
    comp: Computation, order: list[Instruction], in_dims, kept
) -> dict[Instruction, str] | None:
    """ "row" or "element" for every instruction that reads a reduce (None: not a row fusion).

    Row values have the kept shape up to size-1 dimensions (one value per row, at linear index
    = the row number); element values have the input shape. Row values reach element code only
    through broadcasts that read the current row, and move between row shapes only by
    reshapes, broadcasts and transposes that relabel size-1 dimensions."""
    row_key = squeeze_dims(kept)
    unit_rows = squeeze_dims(in_dims) == row_key  # rows of one element: both levels are one
    level: dict[Instruction, str] = {}
    for instr in order:
        reads = [level.get(o) for o in instr.operands]
        if instr.opcode is Opcode.REDUCE:
            n = len(instr.operands) // 2
            if any(x is not None for x in reads[n:]):
                return None  # an init computed from a reduce
            if not unit_rows and any(x == "row" for x in reads[:n]):
                return None  # a row value as a reduce input
            level[instr] = "row"
            continue
        if not any(x is not None for x in reads):
            continue
        if instr is comp.root and instr.opcode is Opcode.TUPLE:
            continue
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT:
            level[instr] = "row"
            continue
        if not instr.shape.is_array:
            return None
        dims = instr.shape.dims
        if dims == in_dims and not unit_rows:
            here = "element"
        elif squeeze_dims(dims) == row_key:
            here = "row"
        else:
            return None
        if instr.is_elementwise:
            if any(x not in (None, here) for x in reads):
                return None
        elif here == "row":
            if reads[0] != "row" or not _order_preserving(instr):
                return None
        elif not (
            instr.opcode is Opcode.BROADCAST
            and reads[0] == "row"
            and _row_broadcast(instr, in_dims, kept)
        ):
            return None
        level[instr] = here
    return level


def folds_in_tree(r: Instruction) -> bool:
    """True when the interpreter folds ``r`` in its pairwise tree order and a sequential fold
    could round differently: a reducer of floats narrower than 32 bits that is not a plain
    per-operand add/multiply/max/min/bitwise op (those it reduces in f32 and rounds once)."""
    narrow = any(o.shape.dtype in NARROW for o in r.operands)
    return narrow and variadic_reducer_opcodes(r.attrs["to_apply"]) is None


def plan_row_fusion(comp: Computation, *, tree_folds: bool = False) -> RowPlan | None:
    """The plan when ``comp`` is a row fusion this emitter supports, else None.

    Reduces that :func:`folds_in_tree` are accepted only with ``tree_folds`` (a target whose
    row loop folds them in the interpreter's tree order, as the cpu plugin's tree_fold.py)."""
    order = comp.post_order()
    reduces = [i for i in order if i.opcode is Opcode.REDUCE]
    if not reduces:
        return None
    first = reduces[0]
    in_dims = first.operands[0].shape.dims
    reduced = sorted(first.attrs["dimensions"])
    rank = len(in_dims)
    if reduced != list(range(rank - len(reduced), rank)) or not reduced:
        return None
    kept = in_dims[: rank - len(reduced)]
    for r in reduces:
        n = len(r.operands) // 2
        if sorted(r.attrs["dimensions"]) != reduced or any(
            o.shape.dims != in_dims for o in r.operands[:n]
        ):
            return None
        if not supports_scalar_computation(r.attrs["to_apply"]):
            return None
        if folds_in_tree(r) and not tree_folds:
            return None
    levels = _levels(comp, order, in_dims, kept)
    if levels is None:
        return None
    root = comp.root
    outputs = list(root.operands) if root.opcode is Opcode.TUPLE else [root]
    for instr in order:
        if instr is root and root.opcode is Opcode.TUPLE:
            continue
        if instr.opcode is Opcode.REDUCE:
            continue
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT:
            if instr.operands[0].opcode is not Opcode.REDUCE:
                return None
            continue
        if not instr.shape.is_array or not supports_instruction(instr):
            return None
    for out in outputs:
        if out.opcode is Opcode.GET_TUPLE_ELEMENT:
            continue
        if not out.shape.is_array:
            return None
        if out.shape.dims != in_dims and squeeze_dims(out.shape.dims) != squeeze_dims(kept):
            return None
    return RowPlan(
        reduces, in_dims, kept, reduced, outputs, {k for k, v in levels.items() if v == "row"}
    )


class RowEmitter(FusedEmitter):
    """A FusedEmitter that answers a reduce (or its tuple elements) with this row's result, and
    every row-level value at the current row whatever index asks for it (the plan proved that
    every such index names the current row)."""

    def __init__(self, ctx, comp, params, row_level: set[Instruction], *, shift_exp=False):
        super().__init__(ctx, comp, params)
        # exp of ``a - max(a)`` by exp_f32_nonpositive (the same bits; the cpu's row loops turn
        # it on; GPU schedules keep exp_f32 until measured there)
        self.shift_exp = shift_exp
        self.row_values: dict[Instruction, list[ir.Value]] = {}
        self.row_level = row_level
        self._row: tuple[ir.Value, list[ir.Value], tuple[int, ...]] | None = None
        self._row_indices: dict[tuple[int, ...], Index] = {}
        # divides answered from their row's reciprocal (the row loop checks when that is exact)
        self.reciprocals: dict[Instruction, ir.Value] = {}

    def start_row(self, o: ir.Value, kept_multi: list[ir.Value], kept: tuple[int, ...]) -> None:
        self._row = (o, kept_multi, kept)
        self._row_indices.clear()
        self.row_values.clear()
        self.reciprocals.clear()
        self.reset()

    def row_index(self, dims: tuple[int, ...]) -> Index:
        """The index of the current row in a row-level shape ``dims`` (linear = row number)."""
        index = self._row_indices.get(dims)
        if index is None:
            o, kept_multi, kept = self._row
            big = iter(m for m, d in zip(kept_multi, kept, strict=True) if d != 1)
            multi = [i64(0) if d == 1 else next(big) for d in dims]
            index = Index(self.b, dims, multi=multi, linear=o)
            self._row_indices[dims] = index
        return index

    def value(self, instr: Instruction, index: Index) -> ir.Value:
        if instr in self.row_level and self._row is not None:
            index = self.row_index(instr.shape.dims)
        return super().value(instr, index)

    def _emit(self, instr: Instruction, index: Index) -> ir.Value:
        if (
            self.shift_exp
            and instr.opcode is Opcode.EXP
            and nonpositive_argument(instr.operands[0])
        ):
            return exp_f32_nonpositive(self.ctx, self.value(instr.operands[0], index))
        reciprocal = self.reciprocals.get(instr)
        if reciprocal is not None:
            a, s = (self.value(o, index) for o in instr.operands)
            return quotient_by_reciprocal(self.ctx, a, s, reciprocal)
        if instr.opcode is Opcode.REDUCE:
            values = self.row_values.get(instr)
            if values is None:
                raise Unimplemented(f"{instr.name} used before it is computed")
            return values[0]
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT and instr.operands[0].opcode is Opcode.REDUCE:
            return self.row_values[instr.operands[0]][instr.attrs["index"]]
        return super()._emit(instr, index)


def row_source(instr: Instruction) -> Instruction:
    """The instruction a row-level value relabels: through reshapes, and broadcasts and
    transposes that only move size-1 dimensions, down to (say) a reduce."""
    while instr.opcode in (Opcode.RESHAPE, Opcode.BROADCAST, Opcode.TRANSPOSE) and (
        instr.operands[0].shape.size == instr.shape.size and _order_preserving(instr)
    ):
        instr = instr.operands[0]
    return instr


def nonpositive_argument(x: Instruction) -> bool:
    """True when f32 ``x`` is ``a - broadcast(max(a))`` with the max a max-reduce of that very
    ``a`` over the row (softmax's shift): then every x is <= 0 or NaN (a <= max, so a - max
    rounds to <= 0; inf - inf and NaN give NaN), and exp takes exp_f32_nonpositive's shorter
    path, to the same bits. A row broadcast of the reduce is what the row plan allows."""
    if x.opcode is not Opcode.SUBTRACT or x.shape.dtype is not dtypes.F32:
        return False
    a, shift = x.operands
    if shift.opcode is not Opcode.BROADCAST:
        return False
    r = row_source(shift.operands[0])
    if r.opcode is not Opcode.REDUCE or len(r.operands) != 2 or r.operands[0] is not a:
        return False
    return variadic_reducer_opcodes(r.attrs["to_apply"]) == (Opcode.MAXIMUM,)


def apply_reducer(
    ctx: IrContext, r: Instruction, accs: list[ir.Value], values: list[ir.Value]
) -> list[ir.Value]:
    """One step of ``r``'s reducer; plain float add/multiply are reassociable (partial sums)."""
    comp = r.attrs["to_apply"]
    ops = variadic_reducer_opcodes(comp)
    b = ctx.b
    if ops is not None:
        out = []
        for op, acc, v, operand in zip(ops, accs, values, r.operands, strict=False):
            dt = operand.shape.dtype
            if dt.is_float and op is Opcode.ADD:
                out.append(b.fadd(acc, v, flags=("reassoc",)))
            elif dt.is_float and op is Opcode.MULTIPLY:
                out.append(b.fmul(acc, v, flags=("reassoc",)))
            elif dt.is_complex and op is Opcode.ADD:
                out.append(add_reassociable(b, acc, v))
            elif dt.is_float and op in (Opcode.MAXIMUM, Opcode.MINIMUM):
                out.append(ctx.intrinsic("maximum" if op is Opcode.MAXIMUM else "minimum", acc, v))
            else:
                out = []
                break
        if len(out) == len(accs):
            return out
    return emit_scalar_computation(ctx, comp, accs + values)
