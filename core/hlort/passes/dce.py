"""Dead code elimination: instructions nothing needs, and computations nothing calls.

An instruction is live when it is in :meth:`Computation.execution_order`: the root needs it, it
has a side effect (directly or through a computation it calls), a live instruction needs it, or
it is a parameter (parameters are the computation's signature). The interpreter and the backends
run that same order, so what DCE keeps is what runs. Computations unreachable from the entry are
removed.
"""

from __future__ import annotations

from hlort.ir.module import Module
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations


class DeadCodeElimination(Pass):
    name = "dce"

    def __init__(self, remove_computations: bool = True):
        self.remove_computations = remove_computations

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in unfused_computations(module):
            live = comp.execution_order(effects)
            if len(live) == len(comp.instructions):
                continue
            keep = set(live)
            for instr in comp.instructions:
                if instr not in keep:
                    instr.parent = None
            comp.instructions = [i for i in comp.instructions if i in keep]
            changed = True
        if self.remove_computations:
            changed |= remove_unreachable_computations(module)
        return changed


def remove_unreachable_computations(module: Module) -> bool:
    """Drop computations the entry cannot reach; True if any was dropped."""
    reachable = set(module.reachable_computations())
    if len(reachable) == len(module.computations):
        return False
    for comp in module.computations:
        if comp not in reachable:
            comp.parent = None
    module.computations = [c for c in module.computations if c in reachable]
    return True
