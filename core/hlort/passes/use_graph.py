"""UseGraph: the users of every instruction of one computation, kept current while a pass rewrites.

``Computation.users()`` and ``Computation.replace_all_uses`` scan the whole computation; calling
them per rewritten instruction would make a pass quadratic. A pass builds one UseGraph per
computation per run and rewrites through it, so every rewrite costs only the edges it touches.
Removed instructions leave the instruction list in one sweep at :meth:`UseGraph.commit`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.ir.traversal import post_order_from


class UseGraph:
    """Users (as ordered sets) of the instructions of ``comp``; see the module docstring."""

    def __init__(self, comp: Computation, effects: SideEffects | None = None):
        self.comp = comp
        self.effects = effects or SideEffects()
        self._users: dict[Instruction, dict[Instruction, None]] = {i: {} for i in comp.instructions}
        for instr in comp.instructions:
            for op in instr.operands:
                self._users.setdefault(op, {})[instr] = None
        self._removed: dict[Instruction, None] = {}

    # -- queries ------------------------------------------------------------------------------
    def users(self, instr: Instruction) -> list[Instruction]:
        """Distinct users, in the order they started using ``instr``."""
        return list(self._users.get(instr, ()))

    def user_count(self, instr: Instruction) -> int:
        return len(self._users.get(instr, ()))

    def is_root(self, instr: Instruction) -> bool:
        return self.comp.root is instr

    def is_removed(self, instr: Instruction) -> bool:
        return instr in self._removed

    def is_dead(self, instr: Instruction) -> bool:
        """No users, not the root, not a parameter, and no side effect: safe to remove."""
        return (
            not self._users.get(instr)
            and self.comp.root is not instr
            and instr.opcode is not Opcode.PARAMETER
            and not self.effects.of(instr)
        )

    # -- rewrites -----------------------------------------------------------------------------
    def add(self, instr: Instruction) -> Instruction:
        """Append ``instr`` (operands already in this computation) and index its uses."""
        self.comp.add_instruction(instr)
        self._users[instr] = {}
        for op in instr.operands:
            self._users[op][instr] = None
        return instr

    def set_operands(self, instr: Instruction, operands: Sequence[Instruction]) -> None:
        new = list(operands)
        for op in instr.operands:
            if not any(o is op for o in new):
                self._users[op].pop(instr, None)
        instr.operands = new
        for op in new:
            self._users[op][instr] = None

    def replace_uses(self, old: Instruction, new: Instruction) -> None:
        """Point every user of ``old`` (except ``new`` itself) and the root at ``new``."""
        if old is new:
            return
        kept: dict[Instruction, None] = {}
        new_users = self._users.setdefault(new, {})
        for user in self._users.get(old, {}):
            if user is new:
                kept[user] = None
                continue
            user.operands = [new if o is old else o for o in user.operands]
            new_users[user] = None
        self._users[old] = kept
        if self.comp.root is old:
            self.comp.root = new

    def remove(self, instr: Instruction) -> None:
        """Drop an instruction nothing uses; it leaves the list at :meth:`commit`."""
        assert not self._users.get(instr) and self.comp.root is not instr, instr
        for op in instr.operands:
            users = self._users.get(op)
            if users is not None:
                users.pop(instr, None)
        self._users.pop(instr, None)
        self._removed[instr] = None

    def remove_if_dead(self, instr: Instruction) -> int:
        """Remove ``instr`` and then every operand that becomes dead; returns how many."""
        count = 0
        stack = [instr]
        while stack:
            node = stack.pop()
            if node in self._removed or not self.is_dead(node):
                continue
            operands = list(dict.fromkeys(node.operands))
            self.remove(node)
            count += 1
            stack.extend(operands)
        return count

    def replace(self, old: Instruction, new: Instruction) -> None:
        """``replace_uses(old, new)`` then remove ``old`` and what only it used."""
        self.replace_uses(old, new)
        self.remove_if_dead(old)

    def commit(self) -> None:
        """Take removed instructions out of the computation's list (one sweep)."""
        if not self._removed:
            return
        removed = self._removed
        self.comp.instructions = [i for i in self.comp.instructions if i not in removed]
        for instr in removed:
            instr.parent = None
        self._removed = {}


def graph_order(comp: Computation) -> list[Instruction]:
    """Operands before users, found from the root (operands in order), then whatever the root
    does not reach, in list order. Unlike ``post_order`` it does not depend on the order of
    ``comp.instructions``, so decisions made along it survive scheduling: a second pipeline run
    walks the same order and decides the same. A cycle is INTERNAL naming its instructions."""
    starts = [comp.root] if comp.root is not None else []
    starts.extend(comp.instructions)
    return post_order_from(starts, f"computation {comp.name}")


def unique(instrs: Iterable[Instruction]) -> list[Instruction]:
    """Distinct instructions in first-seen order."""
    return list(dict.fromkeys(instrs))
