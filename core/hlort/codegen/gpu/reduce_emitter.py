"""Reductions as element generators: one thread computes one output element of a reduce.

XLA's elemental emitter does the same for reduces it does not give a schedule of their own:
``value(reduce, index)`` runs a loop over the reduced elements of the output element at
``index``, in the interpreter's order (init first, then the elements in row-major order), so the
result is bit for bit the reference's. Used for column reductions (threads run along the kept,
contiguous dimension, so a warp's loads are coalesced), for reductions inside loop fusions, and
for rows too short for a block of their own. Memoized like every other value: a variadic reduce
read through several get-tuple-elements runs its loop once.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import (
    FusedEmitter,
    emit_scalar_computation,
    supports_instruction,
)
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.llvm_types import round_to, value_type
from hlort.codegen.llvm.loops import emit_loop, emit_nest
from hlort.codegen.llvm.row_fusion import apply_reducer
from hlort.codegen.llvm.window_index import emit_if, window_axes, window_positions
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


def supports_reduce(instr: Instruction) -> bool:
    from hlort.codegen.llvm.fused_emitter import supports_scalar_computation

    if instr.opcode is not Opcode.REDUCE:
        return False
    if any(not o.shape.is_array for o in instr.operands):
        return False
    return supports_scalar_computation(instr.attrs["to_apply"])


def supports_reduce_window(instr: Instruction) -> bool:
    """Reduce-windows of every element type the emitter compiles: the window loop folds with
    the inlined reducer, whose narrow-float ops round after every step as the interpreter's
    fold does (interpreter/ops/reduce_window.py)."""
    from hlort.codegen.llvm.complex_values import is_element_dtype
    from hlort.codegen.llvm.fused_emitter import supports_scalar_computation

    if instr.opcode is not Opcode.REDUCE_WINDOW:
        return False
    if any(not o.shape.is_array or not is_element_dtype(o.shape.dtype) for o in instr.operands):
        return False
    return supports_scalar_computation(instr.attrs["to_apply"])


def supports_loop_body(comp: Computation) -> bool:
    """Every instruction of ``comp`` can be generated per element (reduces by their loop)."""
    for instr in comp.instructions:
        if instr is comp.root and instr.opcode is Opcode.TUPLE:
            continue
        if instr.opcode is Opcode.REDUCE:
            if not supports_reduce(instr):
                return False
            continue
        if instr.opcode is Opcode.REDUCE_WINDOW:
            if not supports_reduce_window(instr):
                return False
            continue
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT:
            if instr.operands[0].opcode not in _REDUCING:
                return False
            continue
        if not supports_instruction(instr):
            return False
    return True


_REDUCING = (Opcode.REDUCE, Opcode.REDUCE_WINDOW)


class ReducingEmitter(FusedEmitter):
    """A FusedEmitter that also generates reduce elements (and their tuple elements)."""

    def __init__(self, ctx, comp, params):
        super().__init__(ctx, comp, params)
        self._reduced: dict[tuple[Instruction, Index], list[ir.Value]] = {}

    def reset(self) -> None:
        super().reset()
        self._reduced.clear()

    def reduce_values(self, instr: Instruction, index: Index) -> list[ir.Value]:
        key = (instr, index)
        hit = self._reduced.get(key)
        if hit is None:
            if instr.opcode is Opcode.REDUCE_WINDOW:
                hit = self._emit_window_loop(instr, index)
            else:
                hit = self._emit_reduce_loop(instr, index)
            self._reduced[key] = hit
        return hit

    def _emit(self, instr: Instruction, index: Index) -> ir.Value:
        if instr.opcode in _REDUCING:
            return self.reduce_values(instr, index)[0]
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT and instr.operands[0].opcode in _REDUCING:
            return self.reduce_values(instr.operands[0], index)[instr.attrs["index"]]
        return super()._emit(instr, index)

    def _emit_reduce_loop(self, r: Instruction, index: Index) -> list[ir.Value]:
        b = self.b
        n = len(r.operands) // 2
        in_dims = r.operands[0].shape.dims
        reduced = sorted(r.attrs["dimensions"])
        kept = [d for d in range(len(in_dims)) if d not in reduced]
        red_dims = tuple(in_dims[d] for d in reduced)
        count = 1
        for d in red_dims:
            count *= d
        types = [value_type(o.shape.dtype) for o in r.operands[:n]]
        with b.goto_entry_block():
            slots = [self.ctx.alloca(t) for t in types]
        scalar = Index.scalar(b)
        for slot, init in zip(slots, r.operands[n:], strict=True):
            b.store(self.value(init, scalar), slot)
        out_multi = index.multi  # the kept dimensions, in order
        saved = dict(self._cache), dict(self._reduced)

        def body(j: ir.Value) -> None:
            self._cache.clear()
            self._reduced.clear()
            red_multi = delinearize(b, j, red_dims)
            multi: list = [None] * len(in_dims)
            for d, m in zip(kept, out_multi, strict=True):
                multi[d] = m
            for d, m in zip(reduced, red_multi, strict=True):
                multi[d] = m
            element = Index(b, in_dims, multi=multi)
            accs = [b.load(s, typ=t) for s, t in zip(slots, types, strict=True)]
            values = [self.value(x, element) for x in r.operands[:n]]
            for s, v in zip(slots, apply_reducer(self.ctx, r, accs, values), strict=True):
                b.store(v, s)

        if count:
            emit_loop(b, i64(0), i64(count), body, "red")
        self._cache.clear()
        self._cache.update(saved[0])
        self._reduced.clear()
        self._reduced.update(saved[1])
        return [
            round_to(b, x.shape.dtype, b.load(s, typ=t))
            for s, t, x in zip(slots, types, r.operands[:n], strict=True)
        ]

    def _emit_window_loop(self, r: Instruction, index: Index) -> list[ir.Value]:
        """Fold the window of output element ``index`` in row-major window order from the
        inits, skipping padding and base-dilation holes (window_index.py), as the interpreter."""
        b = self.b
        n = len(r.operands) // 2
        in_dims = r.operands[0].shape.dims
        window = r.attrs["window"]
        out_dims = index.dims
        axes = window_axes(in_dims, out_dims, window)
        types = [value_type(o.shape.dtype) for o in r.operands[:n]]
        with b.goto_entry_block():
            slots = [self.ctx.alloca(t) for t in types]
        scalar = Index.scalar(b)
        for slot, init in zip(slots, r.operands[n:], strict=True):
            b.store(self.value(init, scalar), slot)
        out_multi = index.multi
        saved = dict(self._cache), dict(self._reduced)
        comp = r.attrs["to_apply"]

        def position(ks: list[ir.Value]) -> None:
            self._cache.clear()
            self._reduced.clear()
            ok, multi = window_positions(b, axes, out_multi, ks)

            def fold() -> None:
                element = Index(b, in_dims, multi=multi)
                accs = [b.load(s, typ=t) for s, t in zip(slots, types, strict=True)]
                values = [self.value(x, element) for x in r.operands[:n]]
                new = emit_scalar_computation(self.ctx, comp, accs + values)
                for s, v in zip(slots, new, strict=True):
                    b.store(v, s)

            emit_if(b, ok, fold)

        if all(w.size > 0 for w in window) and all(d > 0 for d in in_dims):
            emit_nest(b, [w.size for w in window], position, "win")
        self._cache.clear()
        self._cache.update(saved[0])
        self._reduced.clear()
        self._reduced.update(saved[1])
        return [b.load(s, typ=t) for s, t in zip(slots, types, strict=True)]


__all__ = ["ReducingEmitter", "supports_loop_body", "supports_reduce"]
