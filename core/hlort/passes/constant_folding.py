"""Constant folding through the reference interpreter, bounded in size.

An instruction whose operands are all constants (or broadcasts of constants, the form the
simplifier gives a splat) is evaluated by the interpreter's own function
for its op (so folding means exactly what running means) and replaced by a constant. Folding never
materializes a big array: broadcast and iota stay as they are (backends generate them for free),
and a result is folded only if it has at most ``max_elements`` elements or no more elements than
the constants its operands stand on together. Side-effecting and device-dependent ops are never
folded.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import HlortError
from hlort.interpreter.evaluator import Evaluator, check_value
from hlort.interpreter.registry import function_for, function_for_instruction
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph
from hlort.shape import ArrayShape

# Never folded: cheap to generate (broadcast, iota), device-dependent, or already leaves.
_KEEP = frozenset(
    {
        Opcode.BROADCAST,
        Opcode.IOTA,
        Opcode.PARAMETER,
        Opcode.CONSTANT,
        Opcode.REPLICA_ID,
        Opcode.PARTITION_ID,
        Opcode.AFTER_ALL,
        Opcode.TUPLE,
        Opcode.GET_TUPLE_ELEMENT,
        Opcode.OPTIMIZATION_BARRIER,
        Opcode.CUSTOM_CALL,
        Opcode.RNG_BIT_GENERATOR,
    }
)


class ConstantFolding(Pass):
    name = "constant-folding"

    def __init__(self, max_elements: int = 1024):
        self.max_elements = max_elements

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        evaluator = Evaluator()
        for comp in unfused_computations(module):
            graph: UseGraph | None = None
            for instr in comp.post_order():
                if graph is not None and graph.is_removed(instr):
                    continue
                if not self._foldable(instr, effects):
                    continue
                value = _evaluate(evaluator, instr)
                if value is None:
                    continue
                graph = graph or UseGraph(comp, effects)
                constant = Instruction(
                    Opcode.CONSTANT, instr.shape, (), name="constant", literal=value
                )
                graph.add(constant)
                graph.replace(instr, constant)
                changed = True
            if graph is not None:
                graph.commit()
        return changed

    def _foldable(self, instr: Instruction, effects: SideEffects) -> bool:
        if instr.opcode in _KEEP or not instr.operands:
            return False
        if not isinstance(instr.shape, ArrayShape):
            return False
        stored = [_stored_constant(o) for o in instr.operands]
        if any(c is None for c in stored):
            return False
        if effects.of(instr):
            return False
        size = instr.shape.size
        return size <= self.max_elements or size <= sum(c.shape.size for c in stored)


def _stored_constant(operand: Instruction) -> Instruction | None:
    """The constant ``operand`` is, or broadcasts; None when it is neither."""
    if operand.opcode is Opcode.BROADCAST and operand.operands[0].opcode is Opcode.CONSTANT:
        operand = operand.operands[0]
    return operand if operand.opcode is Opcode.CONSTANT else None


def _operand_value(evaluator: Evaluator, operand: Instruction):
    """The value of a constant, or of a broadcast of one (a read-only view, not a copy)."""
    if operand.opcode is Opcode.CONSTANT:
        return operand.literal
    return function_for(Opcode.BROADCAST)(evaluator, operand, operand.operands[0].literal)


def _evaluate(evaluator: Evaluator, instr: Instruction) -> np.ndarray | None:
    """The interpreter's value of ``instr`` on its constant operands, or None if it cannot."""
    fn = function_for_instruction(instr)
    if fn is None:
        return None
    try:
        with np.errstate(all="ignore"):
            operands = [_operand_value(evaluator, o) for o in instr.operands]
            value = fn(evaluator, instr, *operands)
        check_value(value, instr.shape, instr)
    except (HlortError, ValueError, TypeError, ArithmeticError):
        return None
    return np.array(value, order="C")
