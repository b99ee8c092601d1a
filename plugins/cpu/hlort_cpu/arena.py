"""The arena of a program's temporaries, laid out by the core's buffer assignment.

Kernel results that die inside a call (temporaries) live at static offsets in one block of
memory per program. Buffer assignment gives values that are never live at the same time the
same offsets, so the block is as large as the peak of live temporaries, not their sum. A small
block (under the host pool's threshold) is kept between calls with its array views, so a call
does no allocation for its temporaries; a few are kept for concurrent calls. A large block comes
from the host pool each call (no page faults: the pool keeps it warm, and its idle memory stays
under the pool's cap, so cached executables do not pin big blocks).

What may live there: a non-tuple result of a kernel thunk, not part of the program's result
(outputs belong to the caller; they come from the host pool), whose every reader is a thunk
that never hands back a view of its input (kernels, and the native thunks compiler.py lists in
_FRESH_RESULTS: dot, convolution, fft, cholesky, triangular-solve). Any other reader (a
tuple, control flow, a fallback) could pass a view of the block beyond the value's last read,
where buffer assignment already gave its bytes to another value. Buffer assignment runs with
in-place reuse off: an output overlapping its input sends LLVM's vectorized loops to their
scalar fallback (the runtime alias checks fail).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.passes.buffer_assignment import assign_buffers
from hlort_cpu.host_pool import POOL_MIN_BYTES, host_pool

ALIGN = 64
KEPT_BLOCKS = 4  # idle small blocks a program keeps (concurrent calls beyond take new ones)


class ArenaPlan:
    """Slots of a program that live in its arena: (slot, dims, dtype, byte offset)."""

    def __init__(self, size: int, placements: list[tuple[int, tuple[int, ...], np.dtype, int]]):
        self.size = size
        self.placements = placements
        self.keeps_blocks = size < POOL_MIN_BYTES
        self._idle: list[list[tuple[int, np.ndarray]]] = []

    def take(self) -> list[tuple[int, np.ndarray]]:
        """(slot, array view) for every placement, in a block no running call is using."""
        if self.keeps_blocks:
            try:
                return self._idle.pop()
            except IndexError:
                pass
        return self._views(self._new_block())

    def give(self, views: list[tuple[int, np.ndarray]]) -> None:
        """A small block waits for the next call; a large one goes back to the pool when its
        views die."""
        if self.keeps_blocks and len(self._idle) < KEPT_BLOCKS:
            self._idle.append(views)

    def _new_block(self) -> np.ndarray:
        if not self.keeps_blocks:
            return host_pool().empty((self.size,), np.dtype(np.uint8))  # 64-byte aligned
        raw = np.empty(self.size + ALIGN, np.uint8)
        start = -raw.ctypes.data % ALIGN
        return raw[start : start + self.size]

    def _views(self, block: np.ndarray) -> list[tuple[int, np.ndarray]]:
        return [
            (slot, np.ndarray(dims, dtype, block, offset))
            for slot, dims, dtype, offset in self.placements
        ]


def plan_arena(
    comp: Computation,
    order: list[Instruction],
    slot: dict[Instruction, int],
    step_kinds: dict[Instruction, str],
) -> ArenaPlan | None:
    """The arena of ``comp``'s program, or None when no value qualifies. ``step_kinds`` maps
    an instruction to its step's kind: "kernel" (writes into the output it is given), "reader"
    (reads its inputs, returns fresh arrays: dot, convolution); absent for any other step."""
    escaping = _part_of_result(comp.root)

    def eligible(instr: Instruction) -> bool:
        if step_kinds.get(instr) != "kernel" or not instr.shape.is_array:
            return False
        if instr in escaping or not users[instr]:
            return False
        return all(step_kinds.get(u) in ("kernel", "reader") for u in users[instr])

    users: dict[Instruction, list[Instruction]] = {i: [] for i in order}
    for instr in order:
        for operand in dict.fromkeys(instr.operands):
            if operand in users:
                users[operand].append(instr)
    chosen = [i for i in order if eligible(i)]
    if not chosen:
        return None
    chosen_set = set(chosen)
    assignment = assign_buffers(
        comp.parent,
        computation=comp,
        schedule=order,
        in_place=False,
        arena_values=_member(chosen_set),
        alignment=ALIGN,
    )
    placements = []
    for instr in chosen:
        buf = assignment.buffer(instr)
        placements.append(
            (
                slot[instr],
                tuple(instr.shape.dims),
                np.dtype(instr.shape.dtype.numpy),
                buf.offset,
            )
        )
    return ArenaPlan(assignment.arena_size, placements)


def _member(members: set[Instruction]) -> Callable[[Instruction], bool]:
    return lambda instr: instr in members


def _part_of_result(root: Instruction) -> set[Instruction]:
    """Instructions whose value (or a leaf of it) is part of the root's value."""
    found: set[Instruction] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if node in found:
            continue
        found.add(node)
        if node.opcode in (Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT):
            stack.extend(node.operands)
    return found
