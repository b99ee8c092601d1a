"""Kernels for fused computations: ``void name(ptr* buffers, i64 begin, i64 end)`` each.

``buffers`` holds the fused computation's parameters in order, then its outputs (the leaves of
the root's shape). ``[begin, end)`` is a range of outer iterations out of ``KernelInfo.extent``;
the runtime splits that range across threads, so kernels never share an output element.

Loop fusion (any root made of elementwise and data-movement ops): a flat loop over linear
element indices in blocks when no op needs per-dimension indices, else a nest whose innermost
loop runs along the last, contiguous dimension; when a transpose moves some operand's contiguous
dimension away from the last one, the nest runs over TILE x TILE tiles instead. Input fusion (a
reduce root, or a tuple of reduces of the same shape and dimensions, variadic ones included):
"row" form when the last input dimension is reduced (accumulators in registers; plain
add/multiply/max/min/bitwise reducers are marked reassociable so the vectorizer keeps partial
accumulators; other reducers of narrow floats fold in the interpreter's tree order, tree_fold.py);
"column" form otherwise (column_reduce.py: accumulators in memory, the inner loop
running along the kept contiguous dimension, with an elementwise epilogue when multi-output
fusion merged one after the reductions). Large full
reductions are split into per-chunk partials (split_reduce.py); those and the vectorizer's
partials are the only reassociation done.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import (
    FusedEmitter,
    needs_multi,
    supports_instruction,
    supports_scalar_computation,
)
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.llvm_types import (
    constant,
    store_element,
)
from hlort.codegen.llvm.loops import NO_UNROLL, NO_VECTORIZE, emit_loop
from hlort.codegen.llvm.row_fusion import folds_in_tree, plan_row_fusion
from hlort.codegen.llvm.target_spec import TargetSpec
from hlort.codegen.llvm.transpose_plan import plan_transpose
from hlort.errors import Unimplemented
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.column_reduce import emit_column, plan_column
from hlort_cpu.codegen.cpu_target import CPU_TARGET
from hlort_cpu.codegen.fusion_kernel import KernelInfo, open_fusion_kernel
from hlort_cpu.codegen.hero_kernels import classify_hero, emit_hero_kernel
from hlort_cpu.codegen.interleave import MIN_INTERLEAVED_TRIPS, interleave_for
from hlort_cpu.codegen.op_kernels import classify_op_kernel, emit_op_kernel
from hlort_cpu.codegen.row_loops import emit_row_fusion
from hlort_cpu.codegen.split_reduce import SPLIT_CHUNK, emit_split_reduce, split_reduce
from hlort_cpu.codegen.transpose_kernel import TILE as TRANSPOSE_TILE
from hlort_cpu.codegen.transpose_kernel import emit_transpose

FLAT_BLOCK = 8192  # elements per outer iteration of a flat loop
TILE = 64  # side of the square tiles of a transposing loop fusion


def root_outputs(comp: Computation) -> list[Instruction]:
    root = comp.root
    return list(root.operands) if root.opcode is Opcode.TUPLE else [root]


def classify(comp: Computation) -> str | None:
    """ "loop", "row", "column", a hero kind (hero_kernels.py) or None (not compilable here)."""
    if plan_transpose(comp) is not None:
        return "transpose"
    hero = classify_hero(comp)
    if hero is not None:
        return hero
    op_kind = classify_op_kernel(comp)  # sort, top-k, rng-bit-generator
    if op_kind is not None:
        return op_kind
    if any(i.opcode is Opcode.REDUCE for i in comp.instructions):
        if plan_row_fusion(comp, tree_folds=True) is not None:
            return "row"
        plan = plan_column(comp, root_outputs(comp))
        if plan is None:
            return None
        reduces = plan.reduces
        for r in reduces:
            if not supports_scalar_computation(r.attrs["to_apply"]):
                return None
            if folds_in_tree(r) and plan.epilogue:
                return None  # tree-order folds (tree_fold.py) write the reductions themselves
            if any(not o.shape.is_array for o in r.operands):
                return None
        body = [i for i in comp.instructions if i.opcode is not Opcode.TUPLE or i is not comp.root]
        others = [i for i in body if i not in reduces]
        return "column" if all(supports_instruction(i) for i in others) else None
    body = [i for i in comp.instructions if i.opcode is not Opcode.TUPLE or i is not comp.root]
    if comp.root.opcode is Opcode.TUPLE:
        outs = root_outputs(comp)
        if any(not o.shape.is_array or o.shape.dims != outs[0].shape.dims for o in outs):
            return None
    elif not comp.root.shape.is_array:
        return None
    return "loop" if all(supports_instruction(i) for i in body) else None


class KernelModule:
    """Collects kernels into one LLVM module (optimized and compiled together)."""

    def __init__(self, name: str = "kernels", target: TargetSpec = CPU_TARGET):
        self.target = target
        self.module = target.new_module(name)
        self.kernels: list[KernelInfo] = []
        self._noalias = False

    def ir_text(self) -> str:
        return str(self.module)

    def add(self, name: str, comp: Computation, noalias: bool = False) -> KernelInfo:
        """Emit ``comp`` as kernel ``name``. ``noalias``: its caller never lets an output overlap
        another buffer (fusion_kernel.open_fusion_kernel); used for kernels of at least
        NOALIAS_MIN_BUFFERS buffers, whose runtime overlap checks cost LLVM the most."""
        self._noalias = noalias
        kind = classify(comp)
        if kind is None:
            raise Unimplemented(f"computation {comp.name} cannot be compiled as one kernel")
        if kind == "row":
            info = self._row(name, comp)
        elif kind == "column":
            info = self._column(name, comp)
        elif kind == "transpose":
            info = self._transpose(name, comp)
        elif kind in ("sort", "rng"):
            info = emit_op_kernel(self.module, self.target, name, comp, kind)
        elif kind != "loop":  # reduce-window, scatter, select-and-scatter
            launch = emit_hero_kernel(self.module, self.target, name, comp, kind)
            info = KernelInfo(name, kind, len(comp.parameters), *launch)
        else:
            info = self._loop(name, comp)
        self.kernels.append(info)
        return info

    # -- common prologue -------------------------------------------------------------------------
    def _function(self, name: str, comp: Computation, n_out: int):
        noalias = self._noalias and len(comp.parameters) + n_out >= NOALIAS_MIN_BUFFERS
        return open_fusion_kernel(self.module, self.target, name, comp, n_out, noalias)

    # -- transposes of the contiguous dimension (transpose_kernel.py) ----------------------------
    def _transpose(self, name: str, comp: Computation) -> KernelInfo:
        fn, b, ctx, params, outs, begin, end = self._function(name, comp, 1)
        extent = emit_transpose(b, plan_transpose(comp), params[0], outs[0], begin, end)
        b.ret_void()
        return KernelInfo(
            name, "transpose", 1, (comp.root.shape,), extent, TRANSPOSE_TILE * TRANSPOSE_TILE
        )

    # -- loop fusion -----------------------------------------------------------------------------
    def _loop(self, name: str, comp: Computation) -> KernelInfo:
        outs = root_outputs(comp)
        shapes = tuple(o.shape for o in outs)
        dims = shapes[0].dims
        total = math.prod(dims)
        fn, b, ctx, params, out_ptrs, begin, end = self._function(name, comp, len(outs))
        emitter = FusedEmitter(ctx, comp, params)

        def store_all(index: Index) -> None:
            emitter.reset()
            values = [emitter.value(o, index) for o in outs]
            for o, v, ptr in zip(outs, values, out_ptrs, strict=True):
                store_element(b, o.shape.dtype, v, ptr, index.linear)

        outer_hints: tuple[str, ...] = ()
        flat = len(dims) <= 1 or not needs_multi(comp)
        tile_dim = None if flat else transposed_dim(comp)
        if tile_dim is not None:
            extent, per_iter, outer = _tiled_outer(b, dims, tile_dim, store_all)
        elif flat:
            block = FLAT_BLOCK
            extent = max(1, -(-total // block)) if total else 0

            def outer(o: ir.Value) -> None:
                start = b.mul(o, i64(block))
                stop = b.add(start, i64(block))
                stop = b.select(b.icmp_signed("<", stop, i64(total)), stop, i64(total))
                emit_loop(
                    b,
                    start,
                    stop,
                    lambda j: store_all(Index(b, dims, linear=j)),
                    "inner",
                    interleave_for(min(total, block)),
                )

            per_iter = block
        else:
            inner_n = dims[-1]
            outer_dims = dims[:-1]
            extent = math.prod(outer_dims) if inner_n else 0
            inner_hints, outer_hints = _short_row_hints(inner_n, shapes)

            def outer(o: ir.Value) -> None:
                outer_multi = delinearize(b, o, outer_dims)
                base = b.mul(o, i64(inner_n))

                def inner(j: ir.Value) -> None:
                    store_all(Index(b, dims, multi=outer_multi + [j], linear=b.add(base, j)))

                emit_loop(
                    b, i64(0), i64(inner_n), inner, "inner", interleave_for(inner_n), inner_hints
                )

            per_iter = inner_n
        emit_loop(b, begin, end, outer, "outer", hints=outer_hints)
        b.ret_void()
        return KernelInfo(name, "loop", len(params), shapes, extent, per_iter)

    # -- input fusion (reductions) ---------------------------------------------------------------
    def _row(self, name: str, comp: Computation) -> KernelInfo:
        r = split_reduce(comp)
        if r is not None:
            shape = r.shape
            fn, b, ctx, params, ptrs, begin, end = self._function(name, comp, 2)
            parts = emit_split_reduce(b, ctx, comp, r, params, ptrs[0], ptrs[1], begin, end)
            b.ret_void()
            return KernelInfo(
                name, "row_reduce", len(params), (shape,), parts, SPLIT_CHUNK, split=True
            )
        plan = plan_row_fusion(comp, tree_folds=True)
        outs = plan.outputs
        shapes = tuple(leaf for o in outs for leaf in o.shape.leaf_shapes())
        fn, b, ctx, params, out_ptrs, begin, end = self._function(name, comp, len(shapes))
        extent, per_row = emit_row_fusion(fn, b, ctx, comp, plan, params, out_ptrs, begin, end)
        b.ret_void()
        return KernelInfo(name, "row_reduce", len(params), shapes, extent, max(per_row, 1))

    def _column(self, name: str, comp: Computation) -> KernelInfo:
        plan = plan_column(comp, root_outputs(comp))
        shapes = tuple(plan.output_shapes)
        fn, b, ctx, params, out_ptrs, begin, end = self._function(name, comp, len(shapes))
        scratch = emit_column(fn, b, ctx, comp, plan, params, out_ptrs, begin, end)
        b.ret_void()
        return KernelInfo(
            name,
            "column_reduce",
            len(params),
            shapes,
            1,
            max(math.prod(plan.in_dims), 1),
            scratch_bytes=scratch,
        )


SHORT_ROW_MIN_BYTES = 33  # rows of at most one AVX2 vector keep LLVM's outer-loop vectorizing
# Kernels of this many buffers or more get noalias pointers when their caller allows (the
# AdamW step: LLVM 216 -> 147 ms; fewer buffers gained little, and the seed's kernels keep
# their code)
NOALIAS_MIN_BUFFERS = 8
code_settings.declare(
    __name__,
    "NOALIAS_MIN_BUFFERS",
    "FLAT_BLOCK",
    "TILE",
    "SHORT_ROW_MIN_BYTES",
    "MIN_INTERLEAVED_TRIPS",
    "SPLIT_CHUNK",
    "TRANSPOSE_TILE",
)


def _short_row_hints(inner_n: int, shapes) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(inner, outer) loop hints of a nest whose rows are short (up to the interleave threshold).

    Left alone, LLVM unrolls a row of 9 to 255 elements completely and then vectorizes the
    *outer* loop, across rows: every access a gather or scatter with the row's stride (a
    [16384, 16] BatchNorm-style broadcast kernel ran 8x slower than a flat one). Kept as a loop
    and the outer one left scalar, the row is vectorized along its contiguous elements. Rows
    that fit one AVX2 vector (8 f32) vectorize better across rows, so they keep the default."""
    itemsize = max(s.dtype.numpy.itemsize for s in shapes)
    if inner_n >= MIN_INTERLEAVED_TRIPS or inner_n * itemsize < SHORT_ROW_MIN_BYTES:
        return (), ()
    return (NO_UNROLL,), (NO_VECTORIZE,)


def transposed_dim(comp: Computation) -> int | None:
    """Output dim that walks some operand's contiguous dim, when a transpose moves it off last.

    A row of the output then reads a column of that operand (one cache line per element), so
    the loop is tiled over this dim and the last one instead of running row by row.
    """
    dims = comp.root.shape.dims if comp.root.shape.is_array else root_outputs(comp)[0].shape.dims
    rank = len(dims)
    for instr in comp.instructions:
        if instr.opcode is not Opcode.TRANSPOSE or instr.shape.dims != dims:
            continue
        a = list(instr.attrs["dimensions"]).index(rank - 1)
        if a != rank - 1 and dims[a] > 1 and dims[-1] > 1:
            return a
    return None


def _tiled_outer(b: ir.IRBuilder, dims: tuple[int, ...], a: int, store_all):
    """Outer iterations over TILE x TILE tiles of output dims (a, last); others stay outer.

    Inside a tile both the written rows and the read columns stay in L1, so reads and writes
    are mostly contiguous. Returns (extent, elements per iteration, outer body).
    """
    rank = len(dims)
    rest = [k for k in range(rank - 1) if k != a]
    grid = [dims[k] for k in rest] + [-(-dims[a] // TILE), -(-dims[-1] // TILE)]
    extent = math.prod(grid) if math.prod(dims) else 0

    def outer(o: ir.Value) -> None:
        pos = delinearize(b, o, tuple(grid))
        a0 = b.mul(pos[-2], i64(TILE))
        j0 = b.mul(pos[-1], i64(TILE))
        a1 = _min(b, b.add(a0, i64(TILE)), dims[a])
        j1 = _min(b, b.add(j0, i64(TILE)), dims[-1])

        def row(i: ir.Value) -> None:
            def inner(j: ir.Value) -> None:
                multi: list[ir.Value] = [i64(0)] * rank
                for k, v in zip(rest, pos[:-2], strict=True):
                    multi[k] = v
                multi[a], multi[-1] = i, j
                store_all(Index(b, dims, multi=multi))

            emit_loop(b, j0, j1, inner, "tile_j")

        emit_loop(b, a0, a1, row, "tile_i")

    return extent, TILE * TILE, outer


def _min(b: ir.IRBuilder, v: ir.Value, n: int) -> ir.Value:
    return b.select(b.icmp_signed("<", v, i64(n)), v, i64(n))


def scalar_constant(dtype, value) -> ir.Constant:
    return constant(dtype, value)
