"""Column-form reductions: kernels for reductions whose last input dimension is kept.

Accumulators live in memory, one per output element (in registers when there are at most
``REGISTER_ACCUMULATORS`` over trailing kept dims, same order): set to the init values,
updated in one pass over the input in its own order (the innermost loop runs along the
contiguous dimension, updating the accumulators of consecutive output elements, which
vectorizes), then written out.
They are the outputs themselves, or a scratch array (``KernelInfo.scratch_bytes``, passed after
the outputs) when the results need a last step: f16/bf16/float8 sums accumulate in f32 and round
once, as the interpreter does; and an *epilogue*, elementwise code over the reduction results
that multi-output fusion merges after a reduction (``sum / n``, ``exp(max)``, the reduction
itself as a second output), runs in a final loop over the output elements. Reductions the
interpreter folds in its tree order (narrow floats, other reducers) are emitted by
tree_fold.emit_tree_column instead: per output element, in that order, without an epilogue.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter, supports_instruction
from hlort.codegen.llvm.index import Index, delinearize, i64, linearize
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import (
    F32,
    I8,
    NARROW,
    PTR,
    load_element,
    round_to,
    store_element,
    value_type,
)
from hlort.codegen.llvm.loops import NO_VECTORIZE, emit_loop, emit_nest
from hlort.codegen.llvm.row_fusion import apply_reducer, folds_in_tree
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.interleave import interleave_for
from hlort_cpu.codegen.tree_fold import emit_tree_column

SCRATCH_ALIGN = 16
REGISTER_ACCUMULATORS = 32
code_settings.declare(__name__, "SCRATCH_ALIGN", "REGISTER_ACCUMULATORS")
"""At most this many accumulators (output elements x reduction inputs) over trailing kept dims
are kept in registers across the rows (one unrolled add per column and row, which the SLP
vectorizer packs) instead of in memory, where every row's add waited on the previous row's
store: the CNN benchmark's BatchNorm mean and variance over [16,32,32,16] (16 channels), one
thread, CPU time, A/B in one process: 79 -> 38 us and 110 -> 66 us; same bits."""


@dataclass
class ColumnPlan:
    reduces: list[Instruction]  # all over the same input dims and reduced dimensions
    outputs: list[Instruction]  # the root's outputs
    epilogue: bool  # outputs are computed from the reductions, not the reductions themselves
    in_dims: tuple[int, ...]
    kept: list[int]
    out_dims: tuple[int, ...]

    @property
    def output_shapes(self) -> list[ArrayShape]:
        if self.epilogue:
            return [o.shape for o in self.outputs]
        return [leaf for r in self.reduces for leaf in r.shape.leaf_shapes()]


def plan_column(comp: Computation, outputs: list[Instruction]) -> ColumnPlan | None:
    """The plan of a column-form kernel for ``comp`` (root outputs ``outputs``), or None."""
    reduces = [i for i in comp.instructions if i.opcode is Opcode.REDUCE]
    if not reduces:
        return None
    first = reduces[0]
    in_dims = first.operands[0].shape.dims
    dims = tuple(sorted(first.attrs["dimensions"]))
    for r in reduces:
        n = len(r.operands) // 2
        if tuple(sorted(r.attrs["dimensions"])) != dims:
            return None
        if any(o.shape.dims != in_dims for o in r.operands[:n]):
            return None
    kept = [d for d in range(len(in_dims)) if d not in dims]
    out_dims = tuple(in_dims[d] for d in kept)
    after = _downstream(comp, reduces)
    if any(r in after for r in reduces):
        return None  # a reduction reading another's result needs two passes over the input
    plain = set(outputs) == set(reduces) and len(outputs) == len(reduces)
    if plain:  # the kernel's outputs are the reductions, in the root's order
        return ColumnPlan(list(outputs), outputs, False, in_dims, kept, out_dims)
    if any(not r.shape.is_array for r in reduces):
        return None  # a variadic reduction's epilogue would read through get-tuple-element
    for instr in comp.instructions:
        if instr not in after or (instr is comp.root and instr.opcode is Opcode.TUPLE):
            continue
        if instr.opcode is Opcode.REDUCE:
            return None  # a reduction of a reduction's result
        if not (
            instr.is_elementwise and instr.shape.dims == out_dims and supports_instruction(instr)
        ):
            return None
    if any(not o.shape.is_array or o.shape.dims != out_dims for o in outputs):
        return None
    return ColumnPlan(reduces, outputs, True, in_dims, kept, out_dims)


def _downstream(comp: Computation, reduces: list[Instruction]) -> set[Instruction]:
    """Ids of the instructions that read a reduction's result, directly or not."""
    found = set(reduces)
    out: set[Instruction] = set()
    for instr in comp.post_order():
        if any(o in found or o in out for o in instr.operands):
            out.add(instr)
    return out


def scratch_layout(plan: ColumnPlan) -> tuple[list[int | None], int]:
    """Byte offset of each accumulator in the scratch array (None: in the output), and its size."""
    count = max(math.prod(plan.out_dims), 1)
    offsets: list[int | None] = []
    total = 0
    shapes = [leaf for r in plan.reduces for leaf in r.shape.leaf_shapes()]
    for s in shapes:
        narrow = s.dtype in NARROW
        if not (plan.epilogue or narrow):
            offsets.append(None)
            continue
        offsets.append(total)
        size = count * (4 if narrow else s.dtype.itemsize)
        total += -(-size // SCRATCH_ALIGN) * SCRATCH_ALIGN
    return offsets, total


def emit_column(
    fn: ir.Function,
    b: ir.IRBuilder,
    ctx: IrContext,
    comp: Computation,
    plan: ColumnPlan,
    params: list[ir.Value],
    out_ptrs: list[ir.Value],
    begin: ir.Value,
    end: ir.Value,
) -> int:
    """Emit the kernel body (one outer iteration); returns the scratch bytes it needs."""
    reduces, in_dims, kept, out_dims = plan.reduces, plan.in_dims, plan.kept, plan.out_dims
    if any(folds_in_tree(r) for r in reduces):
        if plan.epilogue:
            raise Unimplemented(f"{comp.name}: a tree-order reduction with an epilogue")
        emitter = FusedEmitter(ctx, comp, params)
        emit_tree_column(b, ctx, emitter, reduces, in_dims, kept, out_ptrs, begin, end)
        return 0
    count = math.prod(out_dims)
    acc_shapes = [leaf for r in reduces for leaf in r.shape.leaf_shapes()]
    offsets, scratch_bytes = scratch_layout(plan)
    scratch = None
    if scratch_bytes:
        slot = len(params) + len(plan.output_shapes)
        scratch = b.load(b.gep(fn.args[0], [i64(slot)], inbounds=True, source_etype=PTR), typ=PTR)
    # (pointer, dtype of the elements there; None: f32 accumulators of a narrow type)
    accs_at: list[tuple[ir.Value, object]] = []
    for k, (offset, s) in enumerate(zip(offsets, acc_shapes, strict=True)):
        if offset is None:
            accs_at.append((out_ptrs[k], s.dtype))
            continue
        at = b.gep(scratch, [i64(offset)], inbounds=True, source_etype=I8)
        accs_at.append((at, None if s.dtype in NARROW else s.dtype))
    emitter = FusedEmitter(ctx, comp, params)
    slots = [(r, k) for r in reduces for k in range(len(r.operands) // 2)]
    lead = len(in_dims) - len(kept)
    cells, types = None, []  # [column][slot] allocas (entry block: SROA makes them registers)
    if kept == list(range(lead, len(in_dims))) and 0 < count * len(slots) <= REGISTER_ACCUMULATORS:
        types = [F32 if at[1] is None else value_type(at[1]) for at in accs_at]
        cells = [[b.alloca(t) for t in types] for _ in range(count)]

    def load_acc(at, k: ir.Value) -> ir.Value:
        ptr, dt = at
        if dt is None:
            return b.load(b.gep(ptr, [k], inbounds=True, source_etype=F32), typ=F32)
        return load_element(b, dt, ptr, k)

    def store_acc(at, v: ir.Value, k: ir.Value) -> None:
        ptr, dt = at
        if dt is None:
            b.store(v, b.gep(ptr, [k], inbounds=True, source_etype=F32))
        else:
            store_element(b, dt, v, ptr, k)

    def outer(_o: ir.Value) -> None:
        emitter.reset()
        scalar = Index.scalar(b)
        init_values = [
            emitter.value(r.operands[len(r.operands) // 2 + k], scalar) for r, k in slots
        ]

        def init_body(k: ir.Value) -> None:
            for v, at in zip(init_values, accs_at, strict=True):
                store_acc(at, v, k)

        if cells is not None:
            register_rows(init_values)
            if scratch_bytes:
                emit_loop(b, i64(0), i64(count), finish_body, "finish")
            return
        emit_loop(b, i64(0), i64(count), init_body, "init")

        def nest_body(values: list[ir.Value]) -> None:
            emitter.reset()
            index = Index(b, in_dims, multi=values)
            k = linearize(b, [values[d] for d in kept], out_dims)
            accs = [load_acc(at, k) for at in accs_at]
            new: list[ir.Value] = []
            pos = 0
            for r in reduces:
                n = len(r.operands) // 2
                vals = [emitter.value(r.operands[j], index) for j in range(n)]
                new += apply_reducer(ctx, r, accs[pos : pos + n], vals)
                pos += n
            for v, at in zip(new, accs_at, strict=True):
                store_acc(at, v, k)

        emit_nest(b, list(in_dims), nest_body, "col", interleave_for(in_dims[-1] if in_dims else 0))
        if scratch_bytes:
            emit_loop(b, i64(0), i64(count), finish_body, "finish")

    def register_rows(init_values: list[ir.Value]) -> None:
        """Every column's accumulators in ``cells`` over all rows, in order, then stored."""
        for column in cells:
            for v, cell in zip(init_values, column, strict=True):
                b.store(v, cell)
        kept_dims = in_dims[lead:]

        def row(i: ir.Value) -> None:
            emitter.reset()
            multi_lead = delinearize(b, i, in_dims[:lead])
            base = b.mul(i, i64(count))
            for k, column in enumerate(cells):
                emitter.reset()
                at = [i64(c) for c in _unravel(k, kept_dims)]
                index = Index(b, in_dims, multi=multi_lead + at, linear=b.add(base, i64(k)))
                accs = [b.load(cell, typ=t) for cell, t in zip(column, types, strict=True)]
                new: list[ir.Value] = []
                pos = 0
                for r in reduces:
                    n = len(r.operands) // 2
                    vals = [emitter.value(r.operands[j], index) for j in range(n)]
                    new += apply_reducer(ctx, r, accs[pos : pos + n], vals)
                    pos += n
                for v, cell in zip(new, column, strict=True):
                    b.store(v, cell)

        emit_loop(b, i64(0), i64(math.prod(in_dims[:lead])), row, "rows", hints=(NO_VECTORIZE,))
        for k, column in enumerate(cells):
            for cell, at, t in zip(column, accs_at, types, strict=True):
                store_acc(at, b.load(cell, typ=t), i64(k))

    def finish_body(k: ir.Value) -> None:
        """Round narrow accumulators; with an epilogue, compute every output from them."""
        emitter.reset()
        index = Index(b, out_dims, linear=k)
        results = []
        for at, s in zip(accs_at, acc_shapes, strict=True):
            v = load_acc(at, k)
            results.append(round_to(b, s.dtype, v) if at[1] is None else v)
        if not plan.epilogue:
            for (at, _), v, ptr, s in zip(accs_at, results, out_ptrs, acc_shapes, strict=True):
                if at is not ptr:
                    store_element(b, s.dtype, v, ptr, k)
            return
        for r, v in zip(reduces, results, strict=True):
            emitter.provide(r, index, v)
        for o, ptr in zip(plan.outputs, out_ptrs, strict=True):
            store_element(b, o.shape.dtype, emitter.value(o, index), ptr, k)

    emit_loop(b, begin, end, outer, "outer")
    return scratch_bytes


def _unravel(k: int, dims: tuple[int, ...]) -> list[int]:
    out = []
    for d in reversed(dims):
        out.append(k % d)
        k //= d
    return out[::-1]
