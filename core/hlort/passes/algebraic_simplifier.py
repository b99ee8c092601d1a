"""Algebraic simplification: a table of exact rewrite rules, applied until none fires.

The rules live in :mod:`hlort.passes.algebraic_rules` (elementwise identities, data-movement
chains), :mod:`hlort.passes.algebraic_rules_structural` (trivial reduce, dot and while) and
:mod:`hlort.passes.algebraic_rules_canonical` (the canonical forms fusion expects: broadcasts
sink below reshapes, transposes and elementwise ops, as in XLA), one table keyed by opcode, so
adding a rule is adding a row. Every rule is exact under IEEE arithmetic (see those modules for
what is deliberately absent). The pass visits instructions operands-first and revisits the users
of whatever it rewrote, so one run reaches a fixed point.
"""

from __future__ import annotations

from collections import deque

from hlort.errors import HlortError
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.side_effects import SideEffects
from hlort.passes import algebraic_rules, algebraic_rules_canonical, algebraic_rules_structural
from hlort.passes.pass_base import Pass
from hlort.passes.rewriter import Rewriter
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph

RULES: dict = {}
for _table in (
    algebraic_rules.RULES,
    algebraic_rules_structural.RULES,
    algebraic_rules_canonical.RULES,
):
    for _opcode, _rules in _table.items():
        RULES[_opcode] = RULES.get(_opcode, ()) + tuple(_rules)


class AlgebraicSimplifier(Pass):
    name = "algebraic-simplifier"

    def __init__(self, rules: dict | None = None, max_rewrites_per_instruction: int = 8):
        self.rules = RULES if rules is None else rules
        self.max_rewrites_per_instruction = max_rewrites_per_instruction

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in unfused_computations(module):
            changed |= self._run_on(comp, module, effects)
        return changed

    def _run_on(self, comp, module: Module, effects: SideEffects) -> bool:
        order = [i for i in comp.post_order() if i.opcode in self.rules]
        if not order:
            return False
        graph = UseGraph(comp, effects)
        rw = Rewriter(graph, module)
        work = deque(order)
        budget = self.max_rewrites_per_instruction * len(comp.instructions) + 64
        changed = False
        while work and budget > 0:
            instr = work.popleft()
            if graph.is_removed(instr) or instr.parent is not comp:
                continue
            if graph.user_count(instr) == 0 and not graph.is_root(instr):
                continue  # dead: DCE's business, and rewriting it would never settle
            replacement = self._apply(instr, rw)
            if replacement is None:
                continue
            budget -= 1
            graph.replace(instr, replacement)
            changed = True
            work.extend(i for i in rw.added if i.opcode in self.rules)
            if replacement.opcode in self.rules:
                work.append(replacement)
            work.extend(u for u in graph.users(replacement) if u.opcode in self.rules)
            rw.added = []
        graph.commit()
        return changed

    def _apply(self, instr: Instruction, rw: Rewriter) -> Instruction | None:
        for rule in self.rules.get(instr.opcode, ()):
            rw.added = []
            try:
                replacement = rule(instr, rw)
            except HlortError:
                replacement = None
            if replacement is not None and replacement is not instr:
                if replacement.shape == instr.shape:
                    return replacement
            rw.discard_unused()
        return None
