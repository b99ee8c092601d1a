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

from hlort.codegen.llvm.fused_emitter import FusedEmitter, supports_instruction
from hlort.codegen.llvm.index import Index, delinearize, i64
from hlort.codegen.llvm.llvm_types import NARROW, round_to, value_type
from hlort.codegen.llvm.loops import emit_loop
from hlort.codegen.llvm.row_fusion import apply_reducer
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import variadic_reducer_opcodes


def supports_reduce(instr: Instruction) -> bool:
    from hlort.codegen.llvm.fused_emitter import supports_scalar_computation

    if instr.opcode is not Opcode.REDUCE:
        return False
    if any(not o.shape.is_array for o in instr.operands):
        return False
    if not supports_scalar_computation(instr.attrs["to_apply"]):
        return False
    narrow = any(o.shape.dtype in NARROW for o in instr.operands)
    return not (narrow and variadic_reducer_opcodes(instr.attrs["to_apply"]) is None)


def supports_loop_body(comp: Computation) -> bool:
    """Every instruction of ``comp`` can be generated per element (reduces by their loop)."""
    for instr in comp.instructions:
        if instr is comp.root and instr.opcode is Opcode.TUPLE:
            continue
        if instr.opcode is Opcode.REDUCE:
            if not supports_reduce(instr):
                return False
            continue
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT:
            if instr.operands[0].opcode is not Opcode.REDUCE:
                return False
            continue
        if not supports_instruction(instr):
            return False
    return True


class ReducingEmitter(FusedEmitter):
    """A FusedEmitter that also generates reduce elements (and their tuple elements)."""

    def __init__(self, ctx, comp, params):
        super().__init__(ctx, comp, params)
        self._reduced: dict[tuple[int, int], list[ir.Value]] = {}

    def reset(self) -> None:
        super().reset()
        self._reduced.clear()

    def reduce_values(self, instr: Instruction, index: Index) -> list[ir.Value]:
        key = (id(instr), id(index))
        hit = self._reduced.get(key)
        if hit is None:
            hit = self._emit_reduce_loop(instr, index)
            self._reduced[key] = hit
        return hit

    def _emit(self, instr: Instruction, index: Index) -> ir.Value:
        if instr.opcode is Opcode.REDUCE:
            return self.reduce_values(instr, index)[0]
        if instr.opcode is Opcode.GET_TUPLE_ELEMENT and instr.operands[0].opcode is Opcode.REDUCE:
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
            slots = [b.alloca(t) for t in types]
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
        return [round_to(b, x.shape.dtype, b.load(s, typ=t))
                for s, t, x in zip(slots, types, r.operands[:n], strict=True)]  # fmt: skip


__all__ = ["ReducingEmitter", "supports_loop_body", "supports_reduce"]
