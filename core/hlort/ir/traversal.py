"""Depth-first walks over an instruction graph that stop on a cycle and name it.

A well-formed computation is acyclic, but a buggy rewrite can leave a cycle behind, and a walk
that pushes every unfinished operand would then grow its stack without bound. Every walk here
keeps the set of instructions on the current path, so meeting one of them again is recognized
at once: :func:`post_order_from` raises INTERNAL naming the instructions on the cycle, and
:func:`find_cycle` returns them. Both cost one visit per instruction and edge.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from hlort.errors import Internal
from hlort.ir.instruction import Instruction


def describe_cycle(cycle: list[Instruction]) -> str:
    """``a (add) -> b (fusion) -> a``: each instruction reads the next one."""
    names = [f"{i.name} ({i.opcode.value})" for i in cycle]
    return " -> ".join([*names, names[0]]) if names else "(empty)"


def _walk(starts: Iterable[Instruction], on_cycle) -> list[Instruction] | None:
    """Operands before users from each start in turn; calls ``on_cycle(path)`` (the
    instructions on the cycle, each reading the next) and stops when it meets one."""
    order: list[Instruction] = []
    state: dict[Instruction, bool] = {}  # False: on the current path; True: done
    get = state.get
    for start in starts:
        if start in state:
            continue
        state[start] = False
        # (node, its operands not yet visited): the iterator resumes where the node left off
        stack: list[tuple[Instruction, Iterator[Instruction]]] = [(start, iter(start.operands))]
        while stack:
            node, rest = stack[-1]
            for child in rest:
                seen = get(child)
                if seen is None:
                    state[child] = False
                    stack.append((child, iter(child.operands)))
                    break
                if not seen:
                    path = [n for n, _ in stack]
                    return on_cycle(path[path.index(child) :])
            else:
                stack.pop()
                state[node] = True
                order.append(node)
    return order


def post_order_from(starts: Iterable[Instruction], where: str) -> list[Instruction]:
    """Every instruction reachable from ``starts``, operands first (start order kept).
    INTERNAL naming the cycle (in ``where``, e.g. a computation's name) if there is one."""

    def fail(cycle: list[Instruction]):
        raise Internal(
            f"{where}: the instruction graph has a cycle: {describe_cycle(cycle)}; "
            "a pass that rewrote it is wrong (hlort compile --dump-dir shows which)"
        )

    return _walk(starts, fail)


def find_cycle(instructions: Iterable[Instruction]) -> list[Instruction] | None:
    """The instructions of one cycle (each reads the next, the last reads the first), or None
    when the graph is acyclic."""
    found: list[list[Instruction]] = []

    def keep(cycle: list[Instruction]):
        found.append(cycle)

    _walk(instructions, keep)
    return found[0] if found else None
