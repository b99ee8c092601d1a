"""Buffer assignment: every value of the entry computation gets an (offset, size) in one arena.

Over the schedule (``computation.instructions`` once the module is scheduled, else post order):

- *values and buffers*: each array leaf an instruction defines is a value; tuple and
  get-tuple-element alias their operands' values; parameters live in the caller's buffers and
  constants in the program, both outside the arena (``offset`` None);
- *liveness*: a value is live from its definition to its last read (reads through tuples and
  get-tuple-elements count); values reaching the root stay live to the end (outputs);
- *in place*: an elementwise op (or a kLoop fusion reading that operand only elementwise) writes
  into an operand's buffer when that operand is read for the last time here and has the same
  size; so does dynamic-update-slice into its operand 0. A donated parameter (``donated``) is
  reused the same way, and an output may take a donated parameter's buffer once that parameter is
  dead: such outputs are listed in ``output_aliases``;
- *layout*: best fit in one arena: at each step the new buffers take the smallest free block that
  fits (or extend the arena), then the buffers read for the last time are freed and coalesced.

Buffers whose live ranges overlap (interfere) never overlap in the arena. Backends lay out their
device arena from ``arena_size`` and the per-instruction slices. A backend passes the order it
runs instructions in (``schedule``), may turn in-place reuse off (``in_place=False``: its kernels
vectorize only when no output overlaps an input) and may keep some values out of the arena
(``arena_values``: values it allocates itself get kind "external", offset None).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import field

from hlort.ir.attributes import FusionKind
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape, Shape, TupleShape

Index = tuple[int, ...]


@dataclass(eq=False)
class LogicalBuffer:
    id: int
    size: int
    kind: str  # "temp", "output", "parameter", "constant", "external" (backend-allocated)
    defined_by: Instruction
    index: Index
    start: int
    end: int
    offset: int | None = None
    parameter_number: int | None = None
    values: list[tuple[Instruction, Index]] = field(default_factory=list)

    @property
    def in_arena(self) -> bool:
        return self.kind in ("temp", "output")

    def __repr__(self) -> str:
        where = f"@{self.offset}" if self.offset is not None else f"({self.kind})"
        return (
            f"<buffer {self.id} {self.defined_by.name}{list(self.index) or ''} "
            f"{self.size}B {where} [{self.start},{self.end}]>"
        )


@dataclass(frozen=True)
class BufferSlice:
    offset: int | None  # None: outside the arena (a parameter's or constant's own buffer)
    size: int
    buffer: LogicalBuffer


@dataclass
class BufferAssignment:
    computation: Computation
    schedule: list[Instruction]
    buffers: list[LogicalBuffer]
    value_buffers: dict[tuple[Instruction, Index], LogicalBuffer]
    arena_size: int
    peak_bytes: int
    total_bytes: int
    alignment: int
    output_aliases: dict[Index, int]

    def buffer(self, instr: Instruction, index: Index = ()) -> LogicalBuffer:
        return self.value_buffers[(instr, tuple(index))]

    def slice(self, instr: Instruction, index: Index = ()) -> BufferSlice:
        buf = self.buffer(instr, index)
        return BufferSlice(buf.offset, buf.size, buf)

    def slices(self, instr: Instruction) -> list[BufferSlice]:
        """One slice per array leaf of ``instr``'s shape, depth-first."""
        return [self.slice(instr, index) for index, _ in _leaves(instr.shape)]

    @staticmethod
    def interferes(a: LogicalBuffer, b: LogicalBuffer) -> bool:
        return a is not b and a.start <= b.end and b.start <= a.end

    def report(self) -> str:
        lines = [
            f"buffer assignment of {self.computation.name}: arena {self.arena_size} bytes, "
            f"peak live {self.peak_bytes} bytes, {self.total_bytes} bytes without reuse"
        ]
        for index, param in sorted(self.output_aliases.items()):
            lines.append(f"  output {list(index)} aliases donated parameter {param}")
        for b in self.buffers:
            where = f"offset {b.offset:>10}" if b.offset is not None else f"{b.kind:>17}"
            values = ", ".join(i.name + (str(list(x)) if x else "") for i, x in b.values)
            lines.append(f"  {where}  size {b.size:>10}  live [{b.start}, {b.end}]  {values}")
        return "\n".join(lines)


def _leaves(shape: Shape, prefix: Index = ()) -> list[tuple[Index, ArrayShape]]:
    if isinstance(shape, TupleShape):
        out = []
        for k, e in enumerate(shape.elements):
            out.extend(_leaves(e, prefix + (k,)))
        return out
    if isinstance(shape, ArrayShape):
        return [(prefix, shape)]
    return []


def assign_buffers(
    module: Module,
    donated: Sequence[int] = (),
    alignment: int = 64,
    computation: Computation | None = None,
    schedule: Sequence[Instruction] | None = None,
    in_place: bool = True,
    arena_values: Callable[[Instruction], bool] | None = None,
) -> BufferAssignment:
    """Assign the buffers of ``computation`` (default: the entry); see the module docstring."""
    comp = computation or module.entry
    if schedule is None:
        scheduled = module.attributes.get("is_scheduled") == "true"
        schedule = list(comp.instructions) if scheduled else comp.post_order()
    assigner = _Assigner(comp, list(schedule), set(donated), alignment)
    assigner.in_place = in_place
    assigner.arena_values = arena_values
    return assigner.run()


class _Assigner:
    def __init__(
        self, comp: Computation, schedule: list[Instruction], donated: set[int], alignment: int
    ):
        self.comp = comp
        self.schedule = schedule
        self.donated = donated
        self.alignment = max(1, alignment)
        self.end = len(schedule)
        self.position = {i: n for n, i in enumerate(schedule)}
        self.last_read: dict[tuple[Instruction, Index], int] = {}
        self.values: dict[tuple[Instruction, Index], LogicalBuffer] = {}
        self.buffers: list[LogicalBuffer] = []
        self.output_aliases: dict[Index, int] = {}
        self.in_place = True
        self.arena_values: Callable[[Instruction], bool] | None = None

    def run(self) -> BufferAssignment:
        self._liveness()
        for pos, instr in enumerate(self.schedule):
            self._define(instr, pos)
        self._collect_output_aliases()
        arena, peak = self._layout()
        arena_buffers = [b for b in self.buffers if b.in_arena]
        return BufferAssignment(
            self.comp,
            self.schedule,
            self.buffers,
            self.values,
            arena,
            peak,
            sum(b.size for b in arena_buffers),
            self.alignment,
            self.output_aliases,
        )

    # -- liveness -----------------------------------------------------------------------------
    def _liveness(self) -> None:
        """last_read of every value, users first (reverse schedule)."""
        users: dict[Instruction, list[Instruction]] = {}
        for instr in self.schedule:
            for op in dict.fromkeys(instr.operands):
                users.setdefault(op, []).append(instr)
        for instr in reversed(self.schedule):
            for index, _ in _leaves(instr.shape):
                last = self.end if instr is self.comp.root else self.position[instr]
                for user in users.get(instr, ()):
                    last = max(last, self._read_through(user, instr, index))
                self.last_read[(instr, index)] = last

    def _read_through(self, user: Instruction, operand: Instruction, index: Index) -> int:
        if user.opcode is Opcode.TUPLE:
            return max(
                self.last_read[(user, (k,) + index)]
                for k, o in enumerate(user.operands)
                if o is operand
            )
        if user.opcode is Opcode.GET_TUPLE_ELEMENT:
            k = user.attrs["index"]
            if index[:1] == (k,):
                return self.last_read[(user, index[1:])]
            return -1
        return self.position[user]

    # -- definitions --------------------------------------------------------------------------
    def _define(self, instr: Instruction, pos: int) -> None:
        op = instr.opcode
        for index, leaf in _leaves(instr.shape):
            key = (instr, index)
            if op is Opcode.TUPLE:
                buf = self.values[(instr.operands[index[0]], index[1:])]
            elif op is Opcode.GET_TUPLE_ELEMENT:
                buf = self.values[(instr.operands[0], (instr.attrs["index"],) + index)]
            elif op is Opcode.PARAMETER:
                buf = self._new(instr, index, leaf, "parameter", -1)
                buf.parameter_number = instr.parameter_number
                if instr.parameter_number not in self.donated:
                    buf.end = self.end
            elif op is Opcode.CONSTANT:
                buf = self._new(instr, index, leaf, "constant", pos)
            elif self.arena_values is not None and not self.arena_values(instr):
                buf = self._new(instr, index, leaf, "external", pos)
            else:
                buf = (
                    self._in_place(instr, index, leaf, pos)
                    or self._donated_for_output(instr, index, leaf, pos)
                    or self._new(instr, index, leaf, "temp", pos)
                )
            self.values[key] = buf
            buf.values.append((instr, index))
            buf.end = max(buf.end, self.last_read[key])
            if buf.kind == "temp" and self.last_read[key] >= self.end:
                buf.kind = "output"

    def _new(
        self, instr: Instruction, index: Index, leaf: ArrayShape, kind: str, pos: int
    ) -> LogicalBuffer:
        buf = LogicalBuffer(len(self.buffers), leaf.nbytes, kind, instr, index, pos, pos)
        self.buffers.append(buf)
        return buf

    def _in_place(
        self, instr: Instruction, index: Index, leaf: ArrayShape, pos: int
    ) -> LogicalBuffer | None:
        if index != () or not self.in_place:
            return None
        for n in _shareable_operands(instr):
            operand = instr.operands[n]
            buf = self.values.get((operand, ()))
            if buf is None or buf.size != leaf.nbytes or buf.end != pos:
                continue
            writable = buf.kind == "temp" or (
                buf.kind == "parameter" and buf.parameter_number in self.donated
            )
            shared = any(
                self.values.get((o, ())) is buf for o in instr.operands if o is not operand
            )
            if writable and not shared:
                return buf
        return None

    def _donated_for_output(
        self, instr: Instruction, index: Index, leaf: ArrayShape, pos: int
    ) -> LogicalBuffer | None:
        if self.last_read[(instr, index)] < self.end:
            return None
        for buf in self.buffers:
            if (
                buf.kind == "parameter"
                and buf.parameter_number in self.donated
                and buf.size == leaf.nbytes
                and buf.end < pos
                and not any(v[0] is not buf.defined_by for v in buf.values)
            ):
                return buf
        return None

    def _collect_output_aliases(self) -> None:
        root = self.comp.root
        for index, _ in _leaves(root.shape):
            buf = self.values[(root, index)]
            if buf.kind == "parameter" and buf.parameter_number in self.donated:
                self.output_aliases[index] = buf.parameter_number

    # -- layout -------------------------------------------------------------------------------
    def _layout(self) -> tuple[int, int]:
        arena = [b for b in self.buffers if b.in_arena]
        starts: dict[int, list[LogicalBuffer]] = {}
        ends: dict[int, list[LogicalBuffer]] = {}
        for b in arena:
            starts.setdefault(b.start, []).append(b)
            if b.end < self.end:
                ends.setdefault(max(b.end, b.start), []).append(b)
        free = _FreeList()
        top = 0
        live = peak = 0
        for pos in range(self.end + 1):
            for b in starts.get(pos, ()):
                size = _align(b.size, self.alignment)
                offset = free.take(size)
                if offset is None:
                    offset, top = free.extend(size, top)
                b.offset = offset
                live += b.size
            peak = max(peak, live)
            for b in ends.get(pos, ()):
                free.give(b.offset, _align(b.size, self.alignment))
                live -= b.size
        return top, peak


def _align(size: int, alignment: int) -> int:
    return max(alignment, -(-size // alignment) * alignment)


class _FreeList:
    """Free blocks of the arena, sorted by offset and coalesced."""

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.sizes: list[int] = []

    def take(self, size: int) -> int | None:
        best = None
        for n, s in enumerate(self.sizes):
            if s >= size and (best is None or s < self.sizes[best]):
                best = n
        if best is None:
            return None
        offset = self.offsets[best]
        if self.sizes[best] == size:
            del self.offsets[best], self.sizes[best]
        else:
            self.offsets[best] += size
            self.sizes[best] -= size
        return offset

    def extend(self, size: int, top: int) -> tuple[int, int]:
        """Grow the arena; a free block at its end is reused as its first part."""
        if self.offsets and self.offsets[-1] + self.sizes[-1] == top:
            offset = self.offsets.pop()
            self.sizes.pop()
            return offset, offset + size
        return top, top + size

    def give(self, offset: int, size: int) -> None:
        n = bisect.bisect(self.offsets, offset)
        self.offsets.insert(n, offset)
        self.sizes.insert(n, size)
        if n + 1 < len(self.offsets) and offset + size == self.offsets[n + 1]:
            self.sizes[n] += self.sizes.pop(n + 1)
            self.offsets.pop(n + 1)
        if n > 0 and self.offsets[n - 1] + self.sizes[n - 1] == offset:
            self.sizes[n - 1] += self.sizes.pop(n)
            self.offsets.pop(n)


def _shareable_operands(instr: Instruction) -> list[int]:
    """Operands whose buffer ``instr`` may overwrite with its result."""
    if not isinstance(instr.shape, ArrayShape):
        return []
    if instr.opcode is Opcode.DYNAMIC_UPDATE_SLICE:
        return [0]
    if instr.is_elementwise and instr.opcode is not Opcode.MAP:
        dims = instr.shape.dims
        return [
            n
            for n, o in enumerate(instr.operands)
            if isinstance(o.shape, ArrayShape) and o.shape.dims == dims
        ]
    if instr.opcode is Opcode.FUSION and instr.attrs.get("kind") is FusionKind.LOOP:
        comp = instr.attrs["calls"]
        return [
            p.parameter_number
            for p in comp.parameters
            if _elementwise_to_root(comp, p, instr.shape)
        ]
    return []


def _elementwise_to_root(comp: Computation, param: Instruction, shape: ArrayShape) -> bool:
    """Every use of ``param`` reaches the root through same-shaped elementwise ops only, so
    output element i is written after input element i is last read."""
    if not isinstance(param.shape, ArrayShape) or param.shape.dims != shape.dims:
        return False
    users: dict[Instruction, list[Instruction]] = {}
    for instr in comp.instructions:
        for op in instr.operands:
            users.setdefault(op, []).append(instr)
    stack, seen = [param], set()
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        for user in users.get(node, ()):
            if not (
                user.is_elementwise
                and user.opcode is not Opcode.MAP
                and user.shape.dims == shape.dims
            ):
                return False
            stack.append(user)
    return True
