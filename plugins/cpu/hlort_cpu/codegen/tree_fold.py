"""A row's reduction folded in the reference interpreter's pairwise tree order, streamed.

The interpreter (hlort.interpreter.ops.reduction) applies a reducer it has no ufunc for as a
tree: adjacent pairs ``f(x[2k], x[2k+1])``, an odd last element carried up unchanged, level by
level, and finally ``f(init, rest)``. With the carry, the element k of level L always stands for
the aligned block ``[k * 2**L, min((k + 1) * 2**L, n))``, so the tree is the one a binary
counter builds: pushing element j merges it with the pending blocks of the levels where j has a
one bit (``f(pending, new)``, the earlier block on the left), then keeps the result pending at
the first level where j has a zero bit; after the last element the pending blocks, one per one
bit of n, combine from the lowest level up as ``f(higher, lower)``. That needs one pending value
per level and operand (bit_length(n) of them, n being static) and reproduces the interpreter's
every reducer call, operands and order included, so any reducer gives its results bit for bit
(each call is compiled with per-op rounding, as the interpreter evaluates it, so the results
need no rounding after). The cpu row kernel, and emit_tree_column for other reduced dimensions
and variadic reduce roots, use it for the reducers the interpreter folds this way on floats
narrower than 32 bits, where a sequential fold could round differently (a custom reducer with
arithmetic); argmax/argmin of f16 or bf16 (JAX's random.categorical too) take this path as
well. It does not vectorize, unlike the plain reducers' loops.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter, emit_scalar_computation
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.ir_context import IrContext
from hlort.codegen.llvm.llvm_types import store_element, value_type
from hlort.codegen.llvm.loops import emit_loop
from hlort.ir.instruction import Instruction


class TreeFold:
    """Stack slots for one reduce's pending blocks; allocate before the loops that use them."""

    def __init__(self, b: ir.IRBuilder, r: Instruction, row_size: int):
        n = len(r.operands) // 2
        self.reducer = r.attrs["to_apply"]
        self.row_size = row_size
        self.levels = max(row_size.bit_length(), 1)
        self.types = [value_type(o.shape.dtype) for o in r.operands[:n]]
        self.pending = [b.alloca(t, size=i64(self.levels)) for t in self.types]
        self.current = [b.alloca(t) for t in self.types]
        self.level = b.alloca(ir.IntType(64))

    def _slot(self, b: ir.IRBuilder, k: int, level: ir.Value) -> ir.Value:
        return b.gep(self.pending[k], [level], inbounds=True, source_etype=self.types[k])

    def _load_pending(self, b: ir.IRBuilder, level: ir.Value) -> list[ir.Value]:
        return [b.load(self._slot(b, k, level), typ=t) for k, t in enumerate(self.types)]

    def push(self, ctx: IrContext, j: ir.Value, values: list[ir.Value]) -> None:
        """Fold element ``j`` (i64, 0-based, pushed in order), ``values``, into the blocks."""
        b = ctx.b
        fn = b.block.function
        for a, v in zip(self.current, values, strict=True):
            b.store(v, a)
        b.store(i64(0), self.level)
        test = fn.append_basic_block("tree.test")
        merge = fn.append_basic_block("tree.merge")
        done = fn.append_basic_block("tree.keep")
        b.branch(test)
        b.position_at_end(test)
        level = b.load(self.level, typ=ir.IntType(64))
        bit = b.and_(b.lshr(j, level), i64(1))
        b.cbranch(b.icmp_unsigned("!=", bit, i64(0)), merge, done)
        b.position_at_end(merge)
        left = self._load_pending(b, level)
        right = [b.load(a, typ=t) for a, t in zip(self.current, self.types, strict=True)]
        for a, v in zip(
            self.current, emit_scalar_computation(ctx, self.reducer, left + right), strict=True
        ):
            b.store(v, a)
        b.store(b.add(level, i64(1)), self.level)
        b.branch(test)
        b.position_at_end(done)
        for k, (a, t) in enumerate(zip(self.current, self.types, strict=True)):
            b.store(b.load(a, typ=t), self._slot(b, k, level))

    def finish(self, ctx: IrContext, inits: list[ir.Value]) -> list[ir.Value]:
        """``f(init, rest)`` after all ``row_size`` pushes (``inits`` when the row is empty)."""
        if self.row_size == 0:
            return inits
        b = ctx.b
        rest: list[ir.Value] | None = None
        for level in range(self.levels):
            if not (self.row_size >> level) & 1:
                continue
            block = self._load_pending(b, i64(level))
            rest = (
                block if rest is None else emit_scalar_computation(ctx, self.reducer, block + rest)
            )
        return emit_scalar_computation(ctx, self.reducer, inits + rest)


def emit_tree_column(
    b: ir.IRBuilder,
    ctx: IrContext,
    emitter: FusedEmitter,
    reduces: list[Instruction],
    in_dims: tuple[int, ...],
    kept: list[int],
    out_ptrs: list[ir.Value],
    begin: ir.Value,
    end: ir.Value,
) -> None:
    """Reduces (outputs = the reduces' leaves, in order) over any dimensions, each output
    element's elements folded in the tree order: a loop over output elements, and inside one,
    per reduce, a loop over its reduced elements in row-major order (the interpreter's); the
    whole in each outer iteration of ``[begin, end)`` (a column kernel has one)."""
    red = [d for d in range(len(in_dims)) if d not in kept]
    out_dims = tuple(in_dims[d] for d in kept)
    red_dims = tuple(in_dims[d] for d in red)
    row_size = math.prod(red_dims)
    trees = [TreeFold(b, r, row_size) for r in reduces]

    def element(k: ir.Value) -> None:
        emitter.reset()
        kept_multi = delinearize(b, k, out_dims)
        scalar = Index.scalar(b)
        inits = [
            [emitter.value(i, scalar) for i in r.operands[len(r.operands) // 2 :]] for r in reduces
        ]
        results: list[ir.Value] = []
        for r, tree, init in zip(reduces, trees, inits, strict=True):
            n = len(r.operands) // 2

            def push(j: ir.Value, r=r, n=n, tree=tree) -> None:
                emitter.reset()
                multi: list[ir.Value] = [i64(0)] * len(in_dims)
                for d, v in zip(kept, kept_multi, strict=True):
                    multi[d] = v
                for d, v in zip(red, delinearize(b, j, red_dims), strict=True):
                    multi[d] = v
                index = Index(b, in_dims, multi=multi)
                tree.push(ctx, j, [emitter.value(x, index) for x in r.operands[:n]])

            emit_loop(b, i64(0), i64(row_size), push, "tree")
            emitter.reset()
            results += tree.finish(ctx, init)
        leaves = [leaf for r in reduces for leaf in r.shape.leaf_shapes()]
        for v, ptr, s in zip(results, out_ptrs, leaves, strict=True):
            store_element(b, s.dtype, v, ptr, k)

    def outer(_o: ir.Value) -> None:
        emit_loop(b, i64(0), i64(math.prod(out_dims)), element, "elements")

    emit_loop(b, begin, end, outer, "outer")
