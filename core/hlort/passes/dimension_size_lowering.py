"""Dimension-size lowering: bounded dynamism for backends that pad to the bound.

XLA's ``set-dimension-size``/``get-dimension-size`` (``f32[<=8]`` values) become static code:
each ``get-dimension-size`` is the size its ``set-dimension-size`` set (that instruction's size
operand, found by :func:`hlort.ir.dynamic_dimensions.size_source`) or the static size as a
constant; then each ``set-dimension-size`` is its operand, the data padded to the bound. The
interpreter gives the same values (it follows the same sources), so a backend sees only
static ops. Idempotent: a second run finds neither op.
"""

from __future__ import annotations

import numpy as np

from hlort.ir.dynamic_dimensions import size_source
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph


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
