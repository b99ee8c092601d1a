"""Conditionals with the choice on the host and every branch as device steps (HostBranch).

Each branch computation gets a buffer assignment of its own whose parameters are the slots of
that branch's operand, its temps in an arena region of its own; its instructions become steps
like the entry's (kernels, gemms, host fallbacks, nested loops and branches). Each branch ends
with copies of its root's slots into the conditional's result slots, so whichever branch runs,
the result is in the same place. Tokens in operands or results have no slots (no data to move).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.codegen.gpu.program import Copy, HostBranch
from hlort.codegen.gpu.slot_table import SLOT_ALIGNMENT, SlotTable
from hlort.ir.instruction import Instruction
from hlort.passes.buffer_assignment import assign_buffers

if TYPE_CHECKING:
    from hlort.codegen.gpu.compiler import _Walker


def compile_host_branch(
    walker: _Walker, instr: Instruction, slots: SlotTable
) -> tuple[HostBranch | None, str]:
    """The HostBranch for conditional ``instr``, or None and why it stays a host fallback."""
    selector = instr.operands[0].shape
    if selector.rank != 0 or selector.dtype.name not in ("pred", "s32"):
        return None, f"its selector is {selector}, not a scalar pred or s32"
    results = tuple(slots.of(instr))
    branches = []
    for k, comp in enumerate(instr.attrs["branch_computations"]):
        assignment = assign_buffers(
            walker.module, computation=comp, alignment=SLOT_ALIGNMENT, in_place=False
        )
        branch_slots = SlotTable(assignment, slots, list(slots.of(instr.operands[k + 1])))
        steps = walker.steps(assignment, branch_slots)
        roots = branch_slots.of(comp.root)
        for j, (src, dst) in enumerate(zip(roots, results, strict=True)):
            steps.append(
                Copy(src, dst, slots.slots[dst].size, label=f"{instr.name} branch {k} result {j}")
            )
        branches.append(tuple(steps))
    (selector_slot,) = slots.of(instr.operands[0])
    return (
        HostBranch(instr.name, selector_slot, selector.dtype.name, results, tuple(branches)),
        "",
    )


__all__ = ["compile_host_branch"]
