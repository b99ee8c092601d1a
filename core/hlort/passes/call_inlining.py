"""Call inlining: every ``call`` is replaced by a copy of the computation it calls.

Inlining exposes the callee's instructions to the caller's simplification and fusion, which see
one computation at a time. Calls inside the inlined body are inlined too; the callee itself stays
until DCE finds it unreachable. :func:`inline_computation` is shared with the while-loop rules of
the algebraic simplifier.
"""

from __future__ import annotations

from collections.abc import Sequence

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.use_graph import UseGraph


def inline_computation(
    graph: UseGraph,
    callee: Computation,
    operands: Sequence[Instruction],
) -> tuple[Instruction, list[Instruction]]:
    """Copy ``callee``'s live instructions into ``graph``'s computation, its parameters bound to
    ``operands``. Returns the copy of the root and the new instructions."""
    mapping: dict[Instruction, Instruction] = {}
    added: list[Instruction] = []
    for instr in callee.execution_order(graph.effects):
        if instr.opcode is Opcode.PARAMETER:
            mapping[instr] = operands[instr.parameter_number]
            continue
        clone = instr.clone_with(operands=[mapping[o] for o in instr.operands])
        mapping[instr] = graph.add(clone)
        added.append(clone)
    return mapping[callee.root], added


class CallInliner(Pass):
    name = "call-inlining"

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in list(module.computations):
            if comp.is_fusion_computation:
                continue
            calls = [i for i in comp.instructions if i.opcode is Opcode.CALL]
            if not calls:
                continue
            graph = UseGraph(comp, effects)
            while calls:
                call = calls.pop()
                root, added = inline_computation(graph, call.to_apply, call.operands)
                graph.replace_uses(call, root)
                graph.remove(call)  # its side effects, if any, now live in the copies
                calls.extend(i for i in added if i.opcode is Opcode.CALL)
                changed = True
            graph.commit()
        return changed
