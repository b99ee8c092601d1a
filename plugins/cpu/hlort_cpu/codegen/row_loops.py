"""The CPU's row-fusion loop: one outer iteration per row, each reduce one vectorized inner loop.

What a row fusion is, and the emitter that answers row values, are target-neutral
(hlort.codegen.llvm.row_fusion: ``plan_row_fusion``, ``RowEmitter``, ``apply_reducer``). Here
the rows are the kernel's outer iterations (split across threads); inside a row each reduce
runs one inner loop (in dependence order) into accumulators on the stack, row-level consumers
are scalar code, and element-level outputs get one more inner loop. A reduce the interpreter
folds in its tree order (row_fusion.folds_in_tree: narrow floats, other reducers) runs its
inner loop through tree_fold.py instead, in that order, unvectorized. A float max/min reduce
folds by maxnum with the NaN and zero-sign folds of row_extremum.py (IEEE maximum's result).

A value a reduce folds that later loops read too (softmax's ``exp(x - max)``, read again by the
output's divide; attention's masked, scaled scores, read by the exp) is stashed: its loop stores
it in a row of stack scratch (row_stash.py) and later loops load it there instead of computing
it again, the same value, so results do not change. Big element outputs are written through a
stack row and copied out in whole lines with non-temporal stores (row_stream.py).
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import round_to, store_element, value_type
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.row_fusion import RowEmitter, RowPlan, apply_reducer, folds_in_tree
from hlort.ir.computation import Computation
from hlort_cpu.codegen import code_settings, row_quotient
from hlort_cpu.codegen.interleave import interleave_for
from hlort_cpu.codegen.row_extremum import RowExtremum, extremum_kind
from hlort_cpu.codegen.row_quotient import RowQuotients
from hlort_cpu.codegen.row_stash import RowStash
from hlort_cpu.codegen.row_stream import RowStream, streamed_outputs
from hlort_cpu.codegen.tree_fold import TreeFold

SHIFT_EXP = True  # softmax's exp(a - max(a)) by float_math.exp_f32_nonpositive (same bits)
code_settings.declare(__name__, "SHIFT_EXP")


def emit_row_fusion(
    fn: ir.Function,
    b: ir.IRBuilder,
    ctx: IrContext,
    comp: Computation,
    plan: RowPlan,
    params: list[ir.Value],
    out_ptrs: list[ir.Value],
    begin: ir.Value,
    end: ir.Value,
) -> tuple[int, int]:
    """Emit the row loop; returns (extent, elements per row)."""
    em = RowEmitter(ctx, comp, params, plan.row_level, shift_exp=SHIFT_EXP)
    in_dims, kept = plan.in_dims, plan.kept_dims
    red_dims = [in_dims[d] for d in plan.reduced]
    row_size = math.prod(red_dims)
    extent = math.prod(kept) if kept else 1
    if math.prod(in_dims) == 0 and row_size != 0:
        extent = 0
    slots = {
        r: [value_type(o.shape.dtype) for o in r.operands[: len(r.operands) // 2]]
        for r in plan.reduces
    }
    allocas = {r: [b.alloca(t) for t in ts] for r, ts in ((r, slots[r]) for r in plan.reduces)}
    trees = {r: TreeFold(b, r, row_size) for r in plan.reduces if folds_in_tree(r)}
    extrema = {}
    for r in plan.reduces:
        op = None if r in trees else extremum_kind(r, slots[r][0])
        if op is not None:
            extrema[r] = RowExtremum(b, op, slots[r][0])
    stash = RowStash(b, comp, [r for r in plan.reduces if r not in trees], row_size)
    quotients = RowQuotients(b, plan)
    element_outs = [
        k for k, out in enumerate(plan.outputs) if out.shape.dims == in_dims and in_dims != kept
    ]
    picked = streamed_outputs(comp, plan.outputs, element_outs, row_size)
    stream = RowStream(b, plan.outputs, picked, out_ptrs, row_size)

    def outer(o: ir.Value) -> None:
        kept_multi = delinearize(b, o, kept)
        em.start_row(o, kept_multi, kept)
        stash.start_row()
        quotients.start_row(b)

        def element_index(values: list[ir.Value]) -> Index:
            multi = kept_multi + values if len(plan.reduced) == 1 else None
            return Index(b, in_dims, multi=multi, linear=b.add(b.mul(o, i64(row_size)), values[0]))

        def run_inner(step) -> None:
            def body(r: ir.Value) -> None:
                em.reset()
                index = element_index([r])
                stash.enter(em, index, r)
                step(index, r)

            emit_loop(b, i64(0), i64(row_size), body, "row", interleave_for(row_size))
            em.reset()

        for r in plan.reduces:
            n = len(r.operands) // 2
            scalar = Index.scalar(b)
            for a, init in zip(allocas[r], r.operands[n:], strict=True):
                b.store(em.value(init, scalar), a)
            extremum = extrema.get(r)
            if extremum is not None:
                extremum.start(ctx, b.load(allocas[r][0], typ=slots[r][0]))

            tree = trees.get(r)
            if tree is not None:

                def push(j: ir.Value, r=r, n=n, tree=tree) -> None:
                    em.reset()
                    index = element_index([j])
                    values = [em.value(x, index) for x in r.operands[:n]]
                    tree.push(ctx, j, values)

                emit_loop(b, i64(0), i64(row_size), push, "tree")
                em.reset()
                inits = [b.load(a, typ=t) for a, t in zip(allocas[r], slots[r], strict=True)]
                for a, v in zip(allocas[r], tree.finish(ctx, inits), strict=True):
                    b.store(v, a)
            else:

                def step(index: Index, _j: ir.Value, r=r, n=n, extremum=extremum) -> None:
                    accs = [b.load(a, typ=t) for a, t in zip(allocas[r], slots[r], strict=True)]
                    values = [em.value(x, index) for x in r.operands[:n]]
                    stash.keep(r, values)
                    quotients.keep(ctx, r, values)
                    if extremum is not None:
                        folded = [extremum.step(ctx, accs[0], values[0])]
                    else:
                        folded = apply_reducer(ctx, r, accs, values)
                    for a, v in zip(allocas[r], folded, strict=True):
                        b.store(v, a)

                run_inner(step)
                stash.finish(r)
                if extremum is not None:
                    a, t = allocas[r][0], slots[r][0]
                    b.store(extremum.finish(ctx, b.load(a, typ=t)), a)
            # narrow floats accumulate in f32 and round once, as the interpreter's reduce does
            # (tree folds round in every reducer call already)
            em.row_values[r] = [
                b.load(a, typ=t)
                if tree is not None
                else round_to(b, x.shape.dtype, b.load(a, typ=t))
                for a, t, x in zip(allocas[r], slots[r], r.operands[:n], strict=True)
            ]
        for k, out in enumerate(plan.outputs):
            if k in element_outs:
                continue
            row_index = em.row_index(out.shape.dims)
            store_element(b, out.shape.dtype, em.value(out, row_index), out_ptrs[k], o)
        if element_outs:

            def write(index: Index, j: ir.Value) -> None:
                for k in element_outs:
                    out = plan.outputs[k]
                    ptr, in_row = stream.target(k)
                    v = em.value(out, index)
                    store_element(b, out.shape.dtype, v, ptr, j if in_row else index.linear)

            if (
                quotients and row_quotient.BY_RECIPROCAL
            ):  # rows whose quotients are exact from 1 / s run without divisions
                with b.if_else(quotients.exact(ctx, em)) as (fast, slow):
                    with fast:
                        run_inner(write)
                    with slow:
                        em.reciprocals.clear()
                        run_inner(write)
            else:
                run_inner(write)
            stream.flush(o)

    emit_loop(b, begin, end, outer, "rows")
    stream.finish()
    return extent, row_size
