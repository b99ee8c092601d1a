"""The compiled GPU program as plain data: what a GPU plugin's runtime executes, target-neutral.

A :class:`GpuProgram` is the whole result of compiling one module for a GPU: the module's kernels
as one LLVM IR module lowered to the target's text or binary (PTX for NVPTX, an object for
AMDGPU), and the steps that run them, in execution order, on buffer slots:

- :class:`KernelLaunch`: kernel name, grid and block (x, y, z), dynamic shared-memory bytes, and
  the slots passed as the kernel's pointer arguments, in order (the kernel ABI: one global
  pointer per argument, nothing else);
- :class:`LibraryCall`: a vendor library routine on slots; ``gemm`` (:class:`GemmSpec`: a
  row-major, optionally batched ``C = alpha * op(A) @ op(B) + beta * C``) is the only one today;
- :class:`HostFallback`: one instruction the device cannot run, executed on the host by the
  reference interpreter (its one-instruction module is carried encoded): the runtime copies its
  operand slots to the host, runs it and copies its result slots back. Every one is listed in
  ``fallbacks`` and counted; none is silent;
- :class:`Copy`: bytes from one slot to another on the device;
- :class:`HostLoop` and :class:`HostBranch`: a while loop or a conditional the host drives, its
  condition, body or branches being steps like these (the host reads the predicate or branch
  index back from the device, one stream synchronize each time);
- :class:`LaunchId`: the launch's replica or partition number (replica-id, partition-id) set in
  a u32 slot by the runtime, which alone knows which copy of the program a launch is.

Slots (:class:`BufferSlot`) come from buffer assignment: parameters (the caller's buffers),
constants (bytes the runtime uploads once at load time; a kernel's row counters are such a
constant of zeros, which the kernel itself returns to zero before it ends), temps and outputs.
Temps and outputs carry an ``offset`` into one device arena of ``arena_bytes`` (a runtime may
allocate them one by one instead: their live ranges are already checked not to overlap where
offsets do). ``outputs``
names the slots holding the flattened result leaves; an output never names a parameter or a
constant slot unless ``donation`` maps that parameter to it (the compiler adds a Copy otherwise).

``to_bytes``/``from_bytes`` use hlort's pickle-free codec (ir/module_codec.py): loading a blob
builds only these dataclasses and never runs code. A blob starts with ``PROGRAM_MAGIC`` and the
little-endian u32 ``FORMAT_VERSION``, read before anything is decoded, so a blob of another
format is refused as such (never taken for damage, never half-read): 3 added LaunchId steps, 2
HostBranch steps and complex gemm calls (``compute_dtype`` c64/c128); format 1 blobs had no
header.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass, field

import numpy as np

from hlort.errors import InvalidArgument
from hlort.ir.module_codec import CodecError, decode_value, encode_value

FORMAT_VERSION = 3
PROGRAM_MAGIC = b"hlort-gpu-program\n"
_VERSION = struct.Struct("<I")
SLOT_KINDS = ("parameter", "constant", "temp", "output")


@dataclass(frozen=True)
class BufferSlot:
    """One device buffer: ``size`` bytes aligned to ``alignment``; ``dtype``/``dims`` are the
    array it holds (a dtype name as hlort.dtypes spells it)."""

    id: int
    kind: str  # one of SLOT_KINDS
    size: int
    alignment: int
    dtype: str
    dims: tuple[int, ...]
    offset: int | None = None  # into the arena, for temps and outputs
    parameter_number: int | None = None
    constant: bytes | None = None  # the initial bytes of a constant slot
    label: str = ""  # the instruction (and tuple index) it holds, for dumps and errors


@dataclass(frozen=True)
class KernelLaunch:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    args: tuple[int, ...]  # slot ids, one pointer argument each
    label: str = ""  # the instruction it computes


@dataclass(frozen=True)
class GemmSpec:
    """Row-major ``C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]`` for ``b < batch``:
    op(A) is m x k, op(B) is k x n, C is m x n; ``transpose_a`` means A is stored k x m."""

    m: int
    n: int
    k: int
    batch: int
    dtype_a: str
    dtype_b: str
    dtype_c: str
    transpose_a: bool = False
    transpose_b: bool = False
    alpha: float = 1.0
    beta: float = 0.0
    compute_dtype: str = "f32"


@dataclass(frozen=True)
class LibraryCall:
    routine: str  # "gemm"
    args: tuple[int, ...]  # gemm: (a, b, c)
    gemm: GemmSpec | None = None
    label: str = ""


@dataclass(frozen=True)
class HostFallback:
    """``module`` is the encoded one-instruction module (hlort.ir.module_codec.encode_module);
    its parameters are ``inputs`` in order, its result leaves ``outputs`` in order."""

    instruction: str
    opcode: str
    reason: str
    module: bytes
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass(frozen=True)
class Copy:
    src: int
    dst: int
    size: int
    src_offset: int = 0
    dst_offset: int = 0
    label: str = ""


@dataclass(frozen=True)
class HostLoop:
    """A while loop the host drives, its condition and body as steps on the device: run the
    ``init`` copies (operands into the ``state`` slots), then repeatedly run ``condition`` and
    read its pred slot ``predicate`` (one byte) back to the host; while it is nonzero run
    ``body`` and then the ``update`` copies (the body's results into the state). The state slots
    hold the while's result. Made only when the runtime says it runs them (``host_loops``)."""

    label: str
    state: tuple[int, ...]
    init: tuple[Copy, ...]
    condition: tuple
    predicate: int
    body: tuple
    update: tuple[Copy, ...]


@dataclass(frozen=True)
class HostBranch:
    """A conditional the host drives: read the ``selector`` slot back (a pred byte, or an s32
    index), choose a branch as the interpreter does (pred: true is branch 0, false branch 1; an
    index outside [0, N) is the last branch) and run that branch's steps, which end with the
    copies of its results into ``results`` (the conditional's result slots). Made only when the
    runtime says it runs host-driven control flow (``host_loops``)."""

    label: str
    selector: int
    selector_dtype: str  # "pred" or "s32"
    results: tuple[int, ...]
    branches: tuple[tuple, ...]

    def branch_index(self, raw: bytes) -> int:
        """The branch the selector's bytes choose."""
        if self.selector_dtype == "pred":
            return 0 if raw[0] else 1
        index = int(np.frombuffer(raw[:4], np.int32)[0])
        return index if 0 <= index < len(self.branches) else len(self.branches) - 1


LAUNCH_ID_KINDS = ("replica", "partition")


@dataclass(frozen=True)
class LaunchId:
    """replica-id or partition-id: the runtime writes this launch's replica (or partition)
    number into ``dst``, a u32 scalar slot, on the device's stream (the program is the same for
    every copy; only the launch knows which copy it is: 0 when it runs alone)."""

    which: str  # one of LAUNCH_ID_KINDS
    dst: int
    label: str = ""

    def value(self, replica: int, partition: int) -> int:
        return replica if self.which == "replica" else partition


Step = KernelLaunch | LibraryCall | HostFallback | Copy | HostLoop | HostBranch | LaunchId


@dataclass(frozen=True)
class KernelInfo:
    name: str
    schedule: str  # which schedule made it: "elementwise", "row_reduce", ...
    num_args: int
    label: str = ""


@dataclass
class GpuProgram:
    name: str
    target: str  # "sm_90", "gfx90a"
    triple: str
    binary_format: str  # "ptx" or "hsaco"
    llvm_ir: str
    binary: bytes
    kernels: list[KernelInfo]
    slots: list[BufferSlot]
    steps: list[Step]
    parameters: list[int]  # slot id of parameter k
    outputs: list[int]  # slot ids of the flattened result leaves
    output_is_tuple: bool
    arena_bytes: int
    donation: dict[int, int] = field(default_factory=dict)  # parameter number -> output leaf
    version: int = FORMAT_VERSION

    @property
    def fallbacks(self) -> list[HostFallback]:
        """Every host fallback, those inside host loops included."""
        return [s for s in every_step(self.steps) if isinstance(s, HostFallback)]

    def slot(self, slot_id: int) -> BufferSlot:
        return self.slots[slot_id]

    def stats(self) -> dict[str, int]:
        """How many steps of each kind, and how many instructions fell back to the host."""
        counts = {
            "kernels": len(self.kernels),
            "launches": 0,
            "library_calls": 0,
            "host_fallbacks": 0,
            "copies": 0,
        }
        names = {
            KernelLaunch: "launches",
            LibraryCall: "library_calls",
            HostFallback: "host_fallbacks",
            Copy: "copies",
            HostLoop: "host_loops",
            HostBranch: "host_branches",
            LaunchId: "launch_ids",
        }
        for step in every_step(self.steps):
            key = names[type(step)]
            counts[key] = counts.get(key, 0) + 1
        return counts

    def fallback_summary(self) -> str:
        return "; ".join(f"{f.instruction} ({f.opcode}): {f.reason}" for f in self.fallbacks)

    def check(self) -> None:
        """Raise InvalidArgument when slot references or kinds are inconsistent."""
        n = len(self.slots)
        for k, s in enumerate(self.slots):
            if s.id != k or s.kind not in SLOT_KINDS:
                raise InvalidArgument(f"GPU program {self.name}: bad slot {k} ({s.kind})")
        for step in every_step(self.steps):
            refs = _step_slots(step)
            if any(not 0 <= r < n for r in refs):
                raise InvalidArgument(
                    f"GPU program {self.name}: step {step} names a slot outside 0..{n - 1}"
                )
            if isinstance(step, LaunchId) and (
                step.which not in LAUNCH_ID_KINDS
                or (self.slots[step.dst].dtype, self.slots[step.dst].size) != ("u32", 4)
            ):
                raise InvalidArgument(
                    f"GPU program {self.name}: step {step} must write a replica or partition "
                    f"number into a u32 scalar slot; recompile the program"
                )
        for r in [*self.parameters, *self.outputs]:
            if not 0 <= r < n:
                raise InvalidArgument(f"GPU program {self.name}: slot {r} out of range")

    def to_bytes(self) -> bytes:
        body = encode_value(_with_bytes_as(self, _bytes_to_array), _CLASSES)
        return PROGRAM_MAGIC + _VERSION.pack(self.version) + body

    @staticmethod
    def from_bytes(data: bytes) -> GpuProgram:
        head = len(PROGRAM_MAGIC) + _VERSION.size
        if data.startswith(PROGRAM_MAGIC) and len(data) >= head:
            (version,) = _VERSION.unpack_from(data, len(PROGRAM_MAGIC))
        else:
            version, head = _headerless_version(data), 0
        if version != FORMAT_VERSION:
            raise InvalidArgument(
                f"GPU program format {version}, this hlort reads format {FORMAT_VERSION} only; "
                f"recompile the program with this hlort"
            )
        program = _decode(data[head:])
        if program.version != version:
            raise InvalidArgument(
                f"GPU program header says format {version}, its body {program.version}; the "
                f"blob is damaged: recompile it"
            )
        program.check()
        return program


def _decode(body: bytes) -> GpuProgram:
    try:
        program = _with_bytes_as(decode_value(body, _CLASSES), _array_to_bytes)
    except (CodecError, TypeError, ValueError) as err:
        raise InvalidArgument(f"not a serialized GPU program: {err}; recompile it") from None
    if not isinstance(program, GpuProgram):
        raise InvalidArgument("the blob holds no GPU program; recompile it")
    return program


def _headerless_version(data: bytes) -> int:
    """The version of a blob without the header: format 1 (every hlort before format 2), or
    INVALID_ARGUMENT when it is no program at all."""
    return _decode(data).version


def every_step(steps):
    """The steps in order, each host loop or branch followed by the steps it runs."""
    for step in steps:
        yield step
        if isinstance(step, HostLoop):
            yield from every_step([*step.init, *step.condition, *step.body, *step.update])
        elif isinstance(step, HostBranch):
            for branch in step.branches:
                yield from every_step(branch)


def _step_slots(step: Step) -> tuple[int, ...]:
    if isinstance(step, HostLoop):
        return step.state + (step.predicate,)
    if isinstance(step, HostBranch):
        return (step.selector,) + step.results
    if isinstance(step, HostFallback):
        return step.inputs + step.outputs
    if isinstance(step, Copy):
        return (step.src, step.dst)
    if isinstance(step, LaunchId):
        return (step.dst,)
    return step.args


def _bytes_to_array(v):
    return np.frombuffer(v, np.uint8).copy() if isinstance(v, bytes) else v


def _array_to_bytes(v):
    return v.tobytes() if isinstance(v, np.ndarray) else v


def _with_bytes_as(value, convert):
    """``value`` with every bytes field converted (the codec carries bytes as uint8 arrays)."""
    if isinstance(value, list):
        return [_with_bytes_as(v, convert) for v in value]
    if type(value) is tuple and any(
        dataclasses.is_dataclass(v) or type(v) is tuple for v in value
    ):  # steps, and a host branch's tuple of step tuples
        return tuple(_with_bytes_as(v, convert) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            nested = isinstance(v, (list, tuple)) or dataclasses.is_dataclass(v)
            new = _with_bytes_as(v, convert) if nested else convert(v)
            if new is not v:
                changes[f.name] = new
        return dataclasses.replace(value, **changes) if changes else value
    return value


_CLASSES: dict[str, type] = {
    c.__name__: c
    for c in (
        BufferSlot,
        KernelLaunch,
        GemmSpec,
        LibraryCall,
        HostFallback,
        Copy,
        HostLoop,
        HostBranch,
        LaunchId,
        KernelInfo,
        GpuProgram,
    )
}

__all__ = [
    "BufferSlot",
    "Copy",
    "GemmSpec",
    "GpuProgram",
    "HostBranch",
    "HostFallback",
    "HostLoop",
    "KernelInfo",
    "KernelLaunch",
    "LAUNCH_ID_KINDS",
    "LaunchId",
    "LibraryCall",
    "Step",
    "SLOT_KINDS",
]
