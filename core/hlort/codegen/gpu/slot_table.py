"""Buffer slots from buffer assignment: one slot per logical buffer, for one computation or for
the computations a host-driven loop runs (each with its own assignment, all in one table).

The entry's temps and outputs keep buffer assignment's arena offsets; a loop's condition and body
get their arena regions after it, and their parameters are the loop's state slots. Scratch
buffers, counters and output copies are added past the arena.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hlort.codegen.gpu.program import BufferSlot
from hlort.ir.instruction import Instruction
from hlort.passes.buffer_assignment import BufferAssignment, LogicalBuffer

SLOT_ALIGNMENT = 256  # what cudaMalloc and hipMalloc give; vector loads need 16


@dataclass
class _Pool:
    slots: list[BufferSlot] = field(default_factory=list)
    arena_end: int = 0

    def reserve(self, size: int) -> int:
        offset = -(-self.arena_end // SLOT_ALIGNMENT) * SLOT_ALIGNMENT
        self.arena_end = offset + size
        return offset

    def add(self, slot: BufferSlot) -> int:
        self.slots.append(slot)
        return slot.id


class SlotTable:
    def __init__(
        self,
        assignment: BufferAssignment,
        parent: SlotTable | None = None,
        parameter_slots: list[int] | None = None,
    ):
        """``parameter_slots``: the slots of the computation's parameter leaves, in order
        (a loop body's state); None for the entry, whose parameters are the caller's."""
        self.assignment = assignment
        self.pool = parent.pool if parent is not None else _Pool()
        self.base = self.pool.reserve(assignment.arena_size) if parent is not None else 0
        if parent is None:
            self.pool.arena_end = assignment.arena_size
        self.parameter_slots = parameter_slots
        self._by_buffer: dict[LogicalBuffer, int] = {}
        self.nested = parent is not None

    @property
    def slots(self) -> list[BufferSlot]:
        return self.pool.slots

    def of(self, instr: Instruction) -> list[int]:
        return [self._slot(s.buffer) for s in self.assignment.slices(instr)]

    def _slot(self, buf: LogicalBuffer) -> int:
        got = self._by_buffer.get(buf)
        if got is not None:
            return got
        if buf.kind == "parameter" and self.parameter_slots is not None:
            got = self.parameter_slots[self._parameter_leaf(buf)]
            self._by_buffer[buf] = got
            return got
        instr = buf.defined_by
        leaf = instr.shape
        for k in buf.index:
            leaf = leaf.elements[k]
        data = None
        if buf.kind == "constant":
            literal = instr.literal
            for k in buf.index:
                literal = literal[k]
            data = np.ascontiguousarray(np.asarray(literal, dtype=leaf.dtype.numpy)).tobytes()
        kind = {"external": "temp"}.get(buf.kind, buf.kind)
        if self.nested and kind == "output":
            kind = "temp"  # a loop body's result is the loop's state, not a program output
        offset = buf.offset + self.base if buf.offset is not None else None
        label = instr.name + (str(list(buf.index)) if buf.index else "")
        slot = BufferSlot(
            len(self.slots),
            kind,
            max(buf.size, 0),
            SLOT_ALIGNMENT,
            leaf.dtype.name,
            tuple(leaf.dims),
            offset,
            None if self.nested else buf.parameter_number,
            data,
            label,
        )
        self._by_buffer[buf] = self.pool.add(slot)
        return slot.id

    def _parameter_leaf(self, buf: LogicalBuffer) -> int:
        """The position of ``buf`` among the flattened leaves of the parameters."""
        from hlort.passes.buffer_assignment import _leaves

        count = 0
        for param in sorted(
            self.assignment.computation.parameters, key=lambda p: p.parameter_number
        ):
            for index, _ in _leaves(param.shape):
                if param is buf.defined_by and index == buf.index:
                    return count
                count += 1
        raise ValueError(f"{buf} is no parameter leaf")

    def temps(self, sizes, label: str) -> list[int]:
        """New byte buffers of ``sizes`` past the arena (a kernel's scratch)."""
        return [
            self.pool.add(
                BufferSlot(
                    len(self.slots),
                    "temp",
                    size,
                    SLOT_ALIGNMENT,
                    "u8",
                    (size,),
                    self.pool.reserve(size),
                    label=label,
                )
            )
            for size in sizes
        ]

    def scratch(self, kernel) -> tuple[int, ...]:
        """Slots for a kernel's scratch buffers (temps past the arena) and its counters (a
        constant of zeros that the kernel restores)."""
        out = self.temps(kernel.scratch, f"{kernel.name} scratch")
        if kernel.counter_bytes:
            out.append(self.constant(bytes(kernel.counter_bytes), f"{kernel.name} counters"))
        return tuple(out)

    def constant(self, data: bytes, label: str) -> int:
        """A new slot holding ``data``, uploaded once at load time (a kernel's table)."""
        slot = BufferSlot(
            len(self.slots),
            "constant",
            len(data),
            SLOT_ALIGNMENT,
            "u8",
            (len(data),),
            constant=data,
            label=label,
        )
        return self.pool.add(slot)

    def fresh(self, like: BufferSlot, kind: str, label: str) -> int:
        """A new slot shaped like ``like`` (an output copy, a loop result's copy)."""
        slot = BufferSlot(
            len(self.slots),
            kind,
            like.size,
            SLOT_ALIGNMENT,
            like.dtype,
            like.dims,
            self.pool.reserve(like.size),
            label=label,
        )
        return self.pool.add(slot)


__all__ = ["SLOT_ALIGNMENT", "SlotTable"]
