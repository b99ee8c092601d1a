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
from hlort.ir.side_effects import SideEffects
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import sequential_computations
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
    index = {i: n for n, i in enumerate(instrs)}
    users: dict[Instruction, list[Instruction]] = {i: [] for i in instrs}
    waiting: dict[Instruction, int] = {}
    after: dict[Instruction, Instruction] = {}  # side-effect order: the next side effect
    previous_effect: Instruction | None = None
    for instr in instrs:
        operands = unique(instr.operands)
        waiting[instr] = len(operands)
        for op in operands:
            users[op].append(instr)
        if effects.of(instr):
            if previous_effect is not None:
                after[previous_effect] = instr
                waiting[instr] += 1
            previous_effect = instr
    remaining = {i: len(users[i]) for i in instrs}
    done: set[Instruction] = set()

    def priority(instr: Instruction) -> int:
        freed = 0
        for op in unique(instr.operands):
            if remaining[op] == 1 and op is not comp.root:
                freed += allocated_bytes(op)
        return freed - allocated_bytes(instr)

    current: dict[Instruction, int] = {}
    heap: list[tuple[int, int, Instruction]] = []

    def push(instr: Instruction) -> None:
        p = priority(instr)
        current[instr] = p
        heapq.heappush(heap, (-p, index[instr], instr))

    def release(instr: Instruction) -> None:
        waiting[instr] -= 1
        if waiting[instr] == 0:
            push(instr)

    order: list[Instruction] = []
    for instr in instrs:
        if waiting[instr] == 0:
            push(instr)
    while heap:
        neg, _, instr = heapq.heappop(heap)
        if instr in done or current.get(instr) != -neg:
            continue
        done.add(instr)
        order.append(instr)
        for op in unique(instr.operands):
            remaining[op] -= 1
            if remaining[op] == 1:
                last = next(u for u in users[op] if u not in done)
                if waiting[last] == 0:
                    push(last)
        for user in users[instr]:
            release(user)
        if instr in after:
            release(after[instr])
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
