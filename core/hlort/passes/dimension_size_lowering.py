"""Dimension-size lowering: bounded dynamism for backends that pad to the bound.

XLA's ``set-dimension-size``/``get-dimension-size`` (``f32[<=8]`` values) become static code:
each ``get-dimension-size`` is the size its ``set-dimension-size`` set (that instruction's size
operand, found by :func:`hlort.ir.dynamic_dimensions.size_source`) or the static size as a
constant; a reduction over such a dimension reads its padding as the reduction's init value
(``select(iota < size, x, init)``, as XLA's dynamic padder masks it); then each
``set-dimension-size`` is its operand, the data padded to the bound. The interpreter gives the
same values (it follows the same sources), so a backend sees only static ops. Idempotent: a
second run finds neither op.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.ir.attributes import ComparisonDirection
from hlort.ir.dynamic_dimensions import size_source
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph
from hlort.shape import ArrayShape


class DimensionSizeLowering(Pass):
    name = "dimension-size-lowering"

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in unfused_computations(module):
            order = comp.post_order()
            gets = [i for i in order if i.opcode is Opcode.GET_DIMENSION_SIZE]
            sets = [i for i in order if i.opcode is Opcode.SET_DIMENSION_SIZE]
            if not gets and not sets:
                continue
            graph = UseGraph(comp, effects)
            for instr in order:
                if instr.opcode is Opcode.REDUCE:
                    _mask_reduced_padding(graph, instr)
            for instr in gets:
                (d,) = instr.attrs["dimensions"]
                operand = instr.operands[0]
                source = size_source(operand, d)
                if source is not None:
                    graph.replace(instr, source.operands[1])
                    continue
                size = np.array(operand.shape.dims[d], np.int32)
                constant = Instruction(
                    Opcode.CONSTANT, instr.shape, (), name="dimension_size", literal=size
                )
                graph.add(constant)
                graph.replace(instr, constant)
            for instr in sets:
                if not graph.is_removed(instr):
                    graph.replace(instr, instr.operands[0])
            graph.commit()
            changed = True
        return changed


def _mask_reduced_padding(graph: UseGraph, reduce: Instruction) -> None:
    count = len(reduce.operands) // 2
    operands = list(reduce.operands)
    for i in range(count):
        value, init = operands[i], operands[count + i]
        dynamic = getattr(value.shape, "dynamic", None) or ()
        for d in reduce.attrs["dimensions"]:
            source = size_source(value, d) if d < len(dynamic) and dynamic[d] else None
            if source is None:
                continue
            dims = value.shape.dims
            index_shape = ArrayShape(source.operands[1].shape.dtype, dims)
            index = graph.add(Instruction(Opcode.IOTA, index_shape, (), {"iota_dimension": d}))
            size = graph.add(
                Instruction(
                    Opcode.BROADCAST, index_shape, (source.operands[1],), {"dimensions": ()}
                )
            )
            inside = graph.add(
                Instruction(
                    Opcode.COMPARE,
                    ArrayShape(dtypes.PRED, dims),
                    (index, size),
                    {"direction": ComparisonDirection.LT},
                )
            )
            padding = graph.add(
                Instruction(
                    Opcode.BROADCAST, value.shape.with_dims(dims), (init,), {"dimensions": ()}
                )
            )
            value = graph.add(
                Instruction(Opcode.SELECT, value.shape.with_dims(dims), (inside, value, padding))
            )
        operands[i] = value
    if operands != list(reduce.operands):
        graph.set_operands(reduce, operands)
