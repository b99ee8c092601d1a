"""Dead code elimination: instructions nothing needs, and computations nothing calls.

An instruction is live when the root needs it, when it has a side effect (directly or through a
computation it calls), when a live instruction needs it, or when it is a parameter (parameters
are the computation's signature). Computations unreachable from the entry are removed.
"""

from __future__ import annotations

from hlort.ir.module import Module
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import SideEffects, live_instructions, unfused_computations


class DeadCodeElimination(Pass):
    name = "dce"

    def __init__(self, remove_computations: bool = True):
        self.remove_computations = remove_computations

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in unfused_computations(module):
            live = live_instructions(comp, effects)
            if len(live) == len(comp.instructions):
                continue
            keep = {id(i) for i in live}
            for instr in comp.instructions:
                if id(instr) not in keep:
                    instr.parent = None
            comp.instructions = [i for i in comp.instructions if id(i) in keep]
            changed = True
        if self.remove_computations:
            changed |= remove_unreachable_computations(module)
        return changed


def remove_unreachable_computations(module: Module) -> bool:
    """Drop computations the entry cannot reach; True if any was dropped."""
    reachable = {id(c) for c in module.reachable_computations()}
    if len(reachable) == len(module.computations):
        return False
    for comp in module.computations:
        if id(comp) not in reachable:
            comp.parent = None
    module.computations = [c for c in module.computations if id(c) in reachable]
    return True
