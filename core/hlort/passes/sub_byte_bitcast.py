"""Sub-byte bitcast expansion: bitcast-convert between s4/u4 and a wider type as integer ops.

s4/u4 are held one element per byte (dtypes.py), so a bitcast-convert that changes the width
to or from them is not a view of memory: it packs two elements per byte, element 0 in the low
nibble (XLA's order: s4[2] {1, 2} -> u8 0x21). This pass spells it out the way XLA's
BitcastDtypesExpander does, in ops every backend compiles:

- ``s4[..., r] -> T[...]`` (T of 4r bits): each nibble as a ``u{4r}``, shifted left by 4j
  (j = its index in the last dimension), OR-reduced over that dimension, then bitcast to T;
- ``T[...] -> s4[..., r]``: T bitcast to ``u{4r}``, broadcast along a new last dimension,
  shifted right by 4j, converted to u4 (the low 4 bits), then bitcast to s4.

Equal-width bitcasts (s4 <-> u4) stay: they are elementwise. The interpreter evaluates the
unexpanded op directly (ops/conversions.py), so the two are checked against each other.
Idempotent: the expansion holds no width-changing sub-byte bitcast.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph
from hlort.shape import ArrayShape

_UNSIGNED_BY_BITS = {8: dtypes.U8, 16: dtypes.U16, 32: dtypes.U32, 64: dtypes.U64}


def is_sub_byte_bitcast(instr: Instruction) -> bool:
    """A bitcast-convert that changes the width to or from s4/u4."""
    if instr.opcode is not Opcode.BITCAST_CONVERT:
        return False
    src, to = instr.operands[0].shape.dtype, instr.shape.dtype
    return src.bits != to.bits and (src.is_sub_byte_integer or to.is_sub_byte_integer)


class SubByteBitcastExpansion(Pass):
    name = "sub-byte-bitcast-expansion"

    def run(self, module: Module) -> bool:
        changed = False
        for comp in unfused_computations(module):
            found = [i for i in comp.instructions if is_sub_byte_bitcast(i)]
            if not found:
                continue
            graph = UseGraph(comp)
            for instr in found:
                graph.replace(instr, _Expansion(module, graph).of(instr))
            graph.commit()
            changed = True
        if changed:
            module.sort_computations()
        return changed


class _Expansion:
    def __init__(self, module: Module, graph: UseGraph):
        self.module = module
        self.graph = graph

    def add(self, opcode: Opcode, shape, operands=(), attrs=None, **kw) -> Instruction:
        return self.graph.add(Instruction(opcode, shape, tuple(operands), attrs, **kw))

    def retype(self, x: Instruction, to: DType) -> Instruction:
        """An equal-width bitcast-convert, or ``x`` itself when it already is ``to``."""
        if x.shape.dtype is to:
            return x
        return self.add(Opcode.BITCAST_CONVERT, x.shape.with_dtype(to), (x,))

    def shifts(self, dtype: DType, dims: tuple[int, ...]) -> Instruction:
        """4 * (index in the last dimension), as ``dtype``, broadcast to ``dims``."""
        r = dims[-1]
        line = self.add(
            Opcode.CONSTANT,
            ArrayShape(dtype, (r,)),
            literal=(np.arange(r) * 4).astype(dtype.numpy),
        )
        return self.add(
            Opcode.BROADCAST, ArrayShape(dtype, dims), (line,), {"dimensions": (len(dims) - 1,)}
        )

    def of(self, instr: Instruction) -> Instruction:
        x = instr.operands[0]
        src, to = x.shape.dtype, instr.shape.dtype
        if src.is_sub_byte_integer:
            return self.pack(x, to, instr.shape)
        return self.unpack(x, to, instr.shape)

    def pack(self, x: Instruction, to: DType, result: ArrayShape) -> Instruction:
        wide = _UNSIGNED_BY_BITS[to.bits]
        dims = x.shape.dims
        nibbles = self.retype(x, dtypes.U4)
        values = self.add(Opcode.CONVERT, ArrayShape(wide, dims), (nibbles,))
        placed = self.add(
            Opcode.SHIFT_LEFT, ArrayShape(wide, dims), (values, self.shifts(wide, dims))
        )
        zero = self.add(Opcode.CONSTANT, ArrayShape(wide, ()), literal=np.zeros((), wide.numpy))
        packed = self.add(
            Opcode.REDUCE,
            result.with_dtype(wide),
            (placed, zero),
            {"dimensions": (len(dims) - 1,), "to_apply": self.or_computation(wide)},
        )
        return self.retype(packed, to)

    def unpack(self, x: Instruction, to: DType, result: ArrayShape) -> Instruction:
        wide = _UNSIGNED_BY_BITS[x.shape.dtype.bits]
        dims = result.dims
        bits = self.retype(x, wide)
        spread = self.add(
            Opcode.BROADCAST,
            ArrayShape(wide, dims),
            (bits,),
            {"dimensions": tuple(range(len(dims) - 1))},
        )
        moved = self.add(
            Opcode.SHIFT_RIGHT_LOGICAL,
            ArrayShape(wide, dims),
            (spread, self.shifts(wide, dims)),
        )
        nibbles = self.add(Opcode.CONVERT, ArrayShape(dtypes.U4, dims), (moved,))
        return self.retype(nibbles, to)

    def or_computation(self, dtype: DType) -> Computation:
        comp = Computation(f"or_{dtype.name}")
        shape = ArrayShape(dtype, ())
        a = comp.add_instruction(Instruction(Opcode.PARAMETER, shape, (), parameter_number=0))
        b = comp.add_instruction(Instruction(Opcode.PARAMETER, shape, (), parameter_number=1))
        comp.set_root(comp.add_instruction(Instruction(Opcode.OR, shape, (a, b))))
        return self.module.add_computation(comp)
