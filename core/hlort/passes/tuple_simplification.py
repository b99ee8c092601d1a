"""Tuple simplification: ``get-tuple-element(tuple(a, b), 1) -> b`` and
``tuple(gte(t, 0), ..., gte(t, n-1)) -> t`` when ``t`` has exactly n elements.

Tuples are plumbing (call and loop boundaries, multi-output results); removing the round trips
lets fusion and CSE see the values themselves.
"""

from __future__ import annotations

from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph


def simplified_tuple_access(instr: Instruction) -> Instruction | None:
    """What ``instr`` can be replaced with, or None."""
    if instr.opcode is Opcode.GET_TUPLE_ELEMENT:
        source = instr.operands[0]
        if source.opcode is Opcode.TUPLE:
            return source.operands[instr.attrs["index"]]
        return None
    if instr.opcode is Opcode.TUPLE and instr.operands:
        first = instr.operands[0]
        if first.opcode is not Opcode.GET_TUPLE_ELEMENT:
            return None
        source = first.operands[0]
        if not source.shape.is_tuple or len(source.shape.elements) != len(instr.operands):
            return None
        for i, op in enumerate(instr.operands):
            if (
                op.opcode is not Opcode.GET_TUPLE_ELEMENT
                or op.operands[0] is not source
                or op.attrs["index"] != i
            ):
                return None
        return source
    return None


class TupleSimplifier(Pass):
    name = "tuple-simplification"

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in unfused_computations(module):
            graph: UseGraph | None = None
            for instr in comp.post_order():
                if instr.opcode not in (Opcode.GET_TUPLE_ELEMENT, Opcode.TUPLE):
                    continue
                if graph is not None and graph.is_removed(instr):
                    continue
                replacement = simplified_tuple_access(instr)
                if replacement is None:
                    continue
                graph = graph or UseGraph(comp, effects)
                graph.replace(instr, replacement)
                changed = True
            if graph is not None:
                graph.commit()
        return changed
