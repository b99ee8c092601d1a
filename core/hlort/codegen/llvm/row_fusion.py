"""Row fusions: reductions over trailing dimensions with their producers and consumers, per row.

The fusion pass puts softmax's max, exp and sum, or layernorm's two moments and rsqrt, in one
kInput fusion. Every reduce there reduces the same trailing dimensions of inputs of one shape D,
leaving "row" values of the kept shape K. Such a fusion runs as one loop over rows (split across
threads); inside a row, each reduce is one vectorized inner loop (in dependence order), row-level
consumers of the reduces are scalar code, and element-level outputs get one more inner loop.
Values flow from a reduce to element-level code only through ``broadcast(row, dims=0..k-1)``,
which always asks for the current row, so a reduce's accumulator stands for its whole output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.llvm.complex_values import add_reassociable
from hlort.codegen.llvm.fused_emitter import (
    FusedEmitter,
    emit_scalar_computation,
    supports_instruction,
    supports_scalar_computation,
)
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import NARROW, round_to, store_element, value_type
from hlort.codegen.llvm.loops import emit_loop, interleave_for
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes


@dataclass
class RowPlan:
    reduces: list[Instruction]  # dependence order
    in_dims: tuple[int, ...]
    kept_dims: tuple[int, ...]
    reduced: list[int]  # trailing dimension numbers
    outputs: list[Instruction]


def _reduce_dependent(comp: Computation) -> set[int]:
    dep: set[int] = set()
    for instr in comp.post_order():
        if instr.opcode is Opcode.REDUCE or any(id(o) in dep for o in instr.operands):
            dep.add(id(instr))
    return dep


def plan_row_fusion(comp: Computation) -> RowPlan | None:
    """The plan when ``comp`` is a row fusion this emitter supports, else None."""
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
        narrow = any(o.shape.dtype in NARROW for o in r.operands)
        if narrow and variadic_reducer_opcodes(r.attrs["to_apply"]) is None:
            return None
    dependent = _reduce_dependent(comp)
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
        if id(instr) in dependent:
            dims = instr.shape.dims
            if dims not in (kept, in_dims) and instr.shape.rank != 0:
                return None
            if instr.opcode is Opcode.BROADCAST:
                src = instr.operands[0]
                ok_row = src.shape.dims == kept and dims == in_dims and tuple(
                    instr.attrs["dimensions"]) == tuple(range(len(kept)))  # fmt: skip
                if not (ok_row or (src.shape.dims == dims) or src.shape.rank == 0):
                    return None
            elif not instr.is_elementwise:
                return None
            if dims == kept and kept != in_dims and instr.shape.rank == 0 and kept:
                return None
    for out in outputs:
        if out.opcode is Opcode.GET_TUPLE_ELEMENT:
            continue
        if not out.shape.is_array or out.shape.dims not in (kept, in_dims):
            return None
    return RowPlan(reduces, in_dims, kept, reduced, outputs)


class RowEmitter(FusedEmitter):
    """A FusedEmitter that answers a reduce (or its tuple elements) with this row's result."""

    def __init__(self, ctx, comp, params):
        super().__init__(ctx, comp, params)
        self.row_values: dict[int, list[ir.Value]] = {}

    def _emit(self, instr: Instruction, index: Index) -> ir.Value:
        if instr.opcode is Opcode.REDUCE:
            values = self.row_values.get(id(instr))
            if values is None:
                raise Unimplemented(f"{instr.name} used before it is computed")
            return values[0]
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT and instr.operands[0].opcode is Opcode.REDUCE:
            return self.row_values[id(instr.operands[0])][instr.attrs["index"]]
        return super()._emit(instr, index)


def apply_reducer(ctx: IrContext, r: Instruction, accs: list[ir.Value],
                  values: list[ir.Value]) -> list[ir.Value]:  # fmt: skip
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


def emit_row_fusion(fn: ir.Function, b: ir.IRBuilder, ctx: IrContext, comp: Computation,
                    plan: RowPlan, params: list[ir.Value], out_ptrs: list[ir.Value],
                    begin: ir.Value, end: ir.Value) -> tuple[int, int]:  # fmt: skip
    """Emit the row loop; returns (extent, elements per row)."""
    em = RowEmitter(ctx, comp, params)
    in_dims, kept = plan.in_dims, plan.kept_dims
    red_dims = [in_dims[d] for d in plan.reduced]
    row_size = math.prod(red_dims)
    extent = math.prod(kept) if kept else 1
    if math.prod(in_dims) == 0 and row_size != 0:
        extent = 0
    slots = {id(r): [value_type(o.shape.dtype) for o in r.operands[: len(r.operands) // 2]]
             for r in plan.reduces}  # fmt: skip
    allocas = {id(r): [b.alloca(t) for t in ts] for r, ts in
               ((r, slots[id(r)]) for r in plan.reduces)}  # fmt: skip

    def outer(o: ir.Value) -> None:
        em.reset()
        em.row_values.clear()
        kept_multi = delinearize(b, o, kept)

        def element_index(values: list[ir.Value]) -> Index:
            multi = kept_multi + values if len(plan.reduced) == 1 else None
            return Index(b, in_dims, multi=multi, linear=b.add(b.mul(o, i64(row_size)), values[0]))

        def run_inner(step) -> None:
            def body(r: ir.Value) -> None:
                em.reset()
                step(element_index([r]))

            emit_loop(b, i64(0), i64(row_size), body, "row", interleave_for(row_size))
            em.reset()

        for r in plan.reduces:
            n = len(r.operands) // 2
            scalar = Index.scalar(b)
            for a, init in zip(allocas[id(r)], r.operands[n:], strict=True):
                b.store(em.value(init, scalar), a)

            def step(index: Index, r=r, n=n) -> None:
                accs = [b.load(a, typ=t) for a, t in zip(allocas[id(r)], slots[id(r)],
                                                        strict=True)]  # fmt: skip
                values = [em.value(x, index) for x in r.operands[:n]]
                for a, v in zip(allocas[id(r)], apply_reducer(ctx, r, accs, values), strict=True):
                    b.store(v, a)

            run_inner(step)
            # narrow floats accumulate in f32 and round once, as the interpreter's reduce does
            em.row_values[id(r)] = [round_to(b, x.shape.dtype, b.load(a, typ=t)) for a, t, x in
                                    zip(allocas[id(r)], slots[id(r)], r.operands[:n],
                                        strict=True)]  # fmt: skip
        row_index = Index(b, kept, multi=kept_multi, linear=o)
        element_outs = []
        for k, out in enumerate(plan.outputs):
            if out.shape.dims == in_dims and in_dims != kept:
                element_outs.append(k)
                continue
            store_element(b, out.shape.dtype, em.value(out, row_index), out_ptrs[k], o)
        if element_outs:

            def write(index: Index) -> None:
                for k in element_outs:
                    out = plan.outputs[k]
                    store_element(b, out.shape.dtype, em.value(out, index), out_ptrs[k],
                                  index.linear)  # fmt: skip
            run_inner(write)

    emit_loop(b, begin, end, outer, "rows")
    return extent, row_size
