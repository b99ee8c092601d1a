"""Which instructions must stay, and which computations run as programs rather than as scalar math.

Whether an instruction has a side effect (directly or through a computation it calls) is
:class:`hlort.ir.side_effects.SideEffects`, in the IR because the execution order needs it: DCE
keeps such instructions, CSE never merges them, constant folding never evaluates them.
"""

from __future__ import annotations

from hlort.ir.computation import Computation, callees_first
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode

__all__ = ["CONTROL_FLOW", "sequential_computations", "unfused_computations"]

# Ops whose called computations run as sequential programs (scheduled, fused, buffer-assigned),
# as opposed to reducers and comparators applied per element.
CONTROL_FLOW = frozenset({Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL})


def sequential_computations(module: Module) -> list[Computation]:
    """The entry and the computations control flow calls (loop bodies, branches), callees first.

    Fusion computations, reducers and comparators are excluded: they are not programs of their
    own but the body of one operation.
    """

    def control_flow_callees(comp: Computation) -> list[Computation]:
        return [
            callee
            for instr in comp.instructions
            if instr.opcode in CONTROL_FLOW
            for callee in instr.called_computations()
        ]

    return callees_first([module.entry] if module.entry is not None else [], control_flow_callees)


def unfused_computations(module: Module) -> list[Computation]:
    """Every computation except fused ones. Fused computations belong to the fusion passes: the
    simplification passes leave them alone, so a second pipeline run sees the fusions exactly as
    the fusion passes made them (their size limits then give the same answers)."""
    return [c for c in module.computations if not c.is_fusion_computation]
