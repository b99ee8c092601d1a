"""Which instructions have a side effect, directly or through a computation they call.

An instruction has a side effect when it says so (custom-call with has_side_effect, opt-barrier)
or when a computation it calls contains one (a while loop whose body prints). Such an instruction
runs even when nothing uses its result: DCE keeps it, CSE never merges it, constant folding never
evaluates it, and :meth:`Computation.execution_order` (what the interpreter and every backend
run) includes it. Answers are cached per computation for the life of one ``SideEffects``: make
a new one after changing what a computation contains.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.ir.opcodes import Opcode

if TYPE_CHECKING:
    from hlort.ir.computation import Computation
    from hlort.ir.instruction import Instruction


class SideEffects:
    """Cached "has a side effect, directly or through a called computation"."""

    def __init__(self) -> None:
        self._comps: dict[Computation, bool] = {}

    def of(self, instr: Instruction) -> bool:
        if not instr.opcode.info.called:
            return instr.has_side_effect
        if instr.has_side_effect:
            return True
        if instr.opcode in (Opcode.REPLICA_ID, Opcode.PARTITION_ID):
            return False
        return any(self.of_computation(c) for c in instr.called_computations())

    def of_computation(self, comp: Computation) -> bool:
        hit = self._comps.get(comp)
        if hit is None:
            self._comps[comp] = False  # recursion guard; the verifier forbids recursion
            hit = any(self.of(i) for i in comp.instructions)
            self._comps[comp] = hit
        return hit
