"""Scheduling: a topological order of each sequential computation that keeps peak memory low.

A list scheduler: among the instructions whose operands are all computed, take the one that frees
the most bytes minus the bytes it allocates (an operand is freed when this is its last unscheduled
user), ties going to the earlier instruction in the current order. Priorities change only when an
operand drops to one remaining user, so a lazy heap keeps the pass O(n log n). Side-effecting
instructions keep their relative order. The schedule is recorded by reordering
``computation.instructions`` and setting ``module.attributes["is_scheduled"] = "true"``; a
scheduled order is its own schedule, so the pass is idempotent.
"""

from __future__ import annotations

import heapq

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import SideEffects, sequential_computations
from hlort.passes.use_graph import unique
from hlort.shape import ArrayShape, Shape, TupleShape

# No buffer of their own: leaves owned by the caller or the program, or aliases of operands.
NO_BUFFER = frozenset({Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT})


def shape_bytes(shape: Shape) -> int:
    if isinstance(shape, ArrayShape):
        return shape.nbytes
    if isinstance(shape, TupleShape):
        return sum(shape_bytes(e) for e in shape.elements)
    return 0


def allocated_bytes(instr: Instruction) -> int:
    """Bytes a new buffer for ``instr``'s result takes (0 for leaves and aliases)."""
    return 0 if instr.opcode in NO_BUFFER else shape_bytes(instr.shape)


def schedule_computation(comp: Computation, effects: SideEffects) -> list[Instruction]:
    """A memory-minimizing topological order of ``comp.instructions`` (see module docstring)."""
    instrs = comp.instructions
    index = {id(i): n for n, i in enumerate(instrs)}
    users: dict[int, list[Instruction]] = {id(i): [] for i in instrs}
    waiting: dict[int, int] = {}
    after: dict[int, Instruction] = {}  # side-effect order: the next side-effecting instruction
    previous_effect: Instruction | None = None
    for instr in instrs:
        operands = unique(instr.operands)
        waiting[id(instr)] = len(operands)
        for op in operands:
            users[id(op)].append(instr)
        if effects.of(instr):
            if previous_effect is not None:
                after[id(previous_effect)] = instr
                waiting[id(instr)] += 1
            previous_effect = instr
    remaining = {id(i): len(users[id(i)]) for i in instrs}
    done: set[int] = set()

    def priority(instr: Instruction) -> int:
        freed = 0
        for op in unique(instr.operands):
            if remaining[id(op)] == 1 and op is not comp.root:
                freed += allocated_bytes(op)
        return freed - allocated_bytes(instr)

    current: dict[int, int] = {}
    heap: list[tuple[int, int, Instruction]] = []

    def push(instr: Instruction) -> None:
        p = priority(instr)
        current[id(instr)] = p
        heapq.heappush(heap, (-p, index[id(instr)], instr))

    def release(instr: Instruction) -> None:
        waiting[id(instr)] -= 1
        if waiting[id(instr)] == 0:
            push(instr)

    order: list[Instruction] = []
    for instr in instrs:
        if waiting[id(instr)] == 0:
            push(instr)
    while heap:
        neg, _, instr = heapq.heappop(heap)
        if id(instr) in done or current.get(id(instr)) != -neg:
            continue
        done.add(id(instr))
        order.append(instr)
        for op in unique(instr.operands):
            remaining[id(op)] -= 1
            if remaining[id(op)] == 1:
                last = next(u for u in users[id(op)] if id(u) not in done)
                if waiting[id(last)] == 0:
                    push(last)
        for user in users[id(instr)]:
            release(user)
        if id(instr) in after:
            release(after[id(instr)])
    if len(order) != len(instrs):  # a cycle: the verifier reports it; keep the order as is
        return list(instrs)
    return order


class Scheduler(Pass):
    name = "scheduling"

    def run(self, module: Module) -> bool:
        changed = False
        effects = SideEffects()
        for comp in sequential_computations(module):
            order = schedule_computation(comp, effects)
            if any(a is not b for a, b in zip(order, comp.instructions, strict=True)):
                comp.instructions = order
                changed = True
        if module.attributes.get("is_scheduled") != "true":
            attrs = {"is_scheduled": "true"}
            attrs.update((k, v) for k, v in module.attributes.items() if k != "is_scheduled")
            module.attributes = attrs
            changed = True
        return changed
