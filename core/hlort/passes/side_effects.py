"""Which instructions must stay, and which computations run as programs rather than as scalar math.

An instruction has a side effect when it says so (custom-call with has_side_effect, opt-barrier)
or when a computation it calls contains one (a while loop whose body prints): DCE keeps it, CSE
never merges it, constant folding never evaluates it. Answers are cached per computation.
"""

from __future__ import annotations

from hlort.ir.computation import Computation, callees_first
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode

# Ops whose called computations run as sequential programs (scheduled, fused, buffer-assigned),
# as opposed to reducers and comparators applied per element.
CONTROL_FLOW = frozenset({Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL})


class SideEffects:
    """Cached "has a side effect, directly or through a called computation"."""

    def __init__(self) -> None:
        self._comps: dict[int, bool] = {}

    def of(self, instr: Instruction) -> bool:
        if not instr.opcode.info.called:
            return instr.has_side_effect
        if instr.has_side_effect:
            return True
        if instr.opcode in (Opcode.REPLICA_ID, Opcode.PARTITION_ID):
            return False
        return any(self.of_computation(c) for c in instr.called_computations())

    def of_computation(self, comp: Computation) -> bool:
        hit = self._comps.get(id(comp))
        if hit is None:
            self._comps[id(comp)] = False  # recursion guard; the verifier forbids recursion
            hit = any(self.of(i) for i in comp.instructions)
            self._comps[id(comp)] = hit
        return hit


def sequential_computations(module: Module) -> list[Computation]:
    """The entry and the computations control flow calls (loop bodies, branches), callees first.

    Fusion computations, reducers and comparators are excluded: they are not programs of their
    own but the body of one operation.
    """

    def control_flow_callees(comp: Computation) -> list[Computation]:
        return [callee for instr in comp.instructions if instr.opcode in CONTROL_FLOW
                for callee in instr.called_computations()]  # fmt: skip

    return callees_first([module.entry] if module.entry is not None else [], control_flow_callees)


def unfused_computations(module: Module) -> list[Computation]:
    """Every computation except fused ones. Fused computations belong to the fusion passes: the
    simplification passes leave them alone, so a second pipeline run sees the fusions exactly as
    the fusion passes made them (their size limits then give the same answers)."""
    return [c for c in module.computations if not c.is_fusion_computation]


def live_instructions(comp: Computation, effects: SideEffects) -> list[Instruction]:
    """Post order of what the root needs, what side effects need, and every parameter."""
    roots = [comp.root] if comp.root is not None else []
    roots += [i for i in comp.instructions if i.opcode is Opcode.PARAMETER or effects.of(i)]
    return comp.reachable_from(roots)
