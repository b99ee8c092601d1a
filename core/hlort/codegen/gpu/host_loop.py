"""While loops with the loop on the host and the condition and body as device steps (HostLoop).

The while's result slots are the loop state (its array leaves: a token has no slot and carries
no data; the steps run in order, which is the order tokens ask for). The condition and the body
get buffer assignments of their own whose parameters are the state slots, their temps in arena
regions of their own; their instructions become steps like the entry's (kernels, gemms, host
fallbacks, nested loops).
A body result that is a state slot, a constant or a repeat is first copied to a fresh slot, so
the update copies never read a state slot another copy has already overwritten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.codegen.gpu.program import Copy, HostLoop
from hlort.codegen.gpu.slot_table import SLOT_ALIGNMENT, SlotTable
from hlort.ir.instruction import Instruction
from hlort.passes.buffer_assignment import assign_buffers

if TYPE_CHECKING:
    from hlort.codegen.gpu.compiler import _Walker


def compile_host_loop(
    walker: _Walker, instr: Instruction, slots: SlotTable
) -> tuple[HostLoop | None, str]:
    """The HostLoop for while ``instr``, or None and why it stays a host fallback."""
    cond, body = instr.attrs["condition"], instr.attrs["body"]
    if cond.root.shape.dtype.name != "pred" or cond.root.shape.rank != 0:
        return None, "its condition is no scalar pred"
    state = tuple(slots.of(instr))
    operand = tuple(slots.of(instr.operands[0]))
    init = tuple(
        Copy(src, dst, slots.slots[dst].size, label=f"{instr.name} init")
        for src, dst in zip(operand, state, strict=True)
        if src != dst
    )
    module = walker.module
    cond_assignment = assign_buffers(
        module, computation=cond, alignment=SLOT_ALIGNMENT, in_place=False
    )
    cond_slots = SlotTable(cond_assignment, slots, list(state))
    condition = tuple(walker.steps(cond_assignment, cond_slots))
    predicate = cond_slots.of(cond.root)[0]
    body_assignment = assign_buffers(
        module, computation=body, alignment=SLOT_ALIGNMENT, in_place=False
    )
    body_slots = SlotTable(body_assignment, slots, list(state))
    body_steps = walker.steps(body_assignment, body_slots)
    results, seen = [], set()
    for k, sid in enumerate(body_slots.of(body.root)):
        slot = body_slots.slots[sid]
        if sid in state or slot.kind == "constant" or sid in seen:
            fresh = body_slots.fresh(slot, "temp", f"{instr.name} result {k}")
            body_steps.append(Copy(sid, fresh, slot.size, label=f"{instr.name} result {k}"))
            sid = fresh
        seen.add(sid)
        results.append(sid)
    update = tuple(
        Copy(src, dst, slots.slots[dst].size, label=f"{instr.name} update")
        for src, dst in zip(results, state, strict=True)
    )
    return HostLoop(instr.name, state, init, condition, predicate, tuple(body_steps), update), ""


__all__ = ["compile_host_loop"]
