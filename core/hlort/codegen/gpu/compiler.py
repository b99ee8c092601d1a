"""The GPU compiler: an optimized module -> a GpuProgram for one GpuTarget.

The entry computation is walked in its schedule. Fusions, and elementwise, data-movement and
reduce instructions on their own, become kernels (kernel_module.py picks the schedule); dots that
fit a gemm become ``gemm`` library calls (their epilogue is the fused kernel after them, as the
fusion pass leaves it); parameters, constants, tuples and get-tuple-elements are buffer slots.
Everything else (while, conditional, sort, scatter, custom calls, a fusion no schedule covers,
...) is a HostFallback step: the instruction runs on the reference interpreter between the
kernels, and every one is listed with its reason in the program (``GpuProgram.fallbacks``) and
in the fallback report (HLORT_FALLBACK decides whether that warns or raises). Nothing falls back
silently. Compiling needs no GPU: the target lowers the kernels to PTX or an object offline.
"""

from __future__ import annotations

import numpy as np

from hlort.codegen.gpu.gemm_step import gemm_spec
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.host_step import host_fallback_module
from hlort.codegen.gpu.kernel_module import GpuKernelModule, choose_schedule
from hlort.codegen.gpu.program import (
    BufferSlot,
    Copy,
    GpuProgram,
    HostFallback,
    KernelInfo,
    KernelLaunch,
    LibraryCall,
)
from hlort.errors import HlortError
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.passes.buffer_assignment import BufferAssignment, LogicalBuffer, assign_buffers
from hlort.passes.fusion_policy import FusionPolicy
from hlort.passes.pass_options import PassOptions
from hlort.plugin.base.fallback_policy import FallbackReport

SLOT_ALIGNMENT = 256  # what cudaMalloc and hipMalloc give; vector loads need 16
_STRUCTURAL = {Opcode.PARAMETER, Opcode.CONSTANT, Opcode.TUPLE, Opcode.GET_TUPLE_ELEMENT}
KERNEL_OPS = frozenset({
    Opcode.BROADCAST, Opcode.RESHAPE, Opcode.TRANSPOSE, Opcode.SLICE, Opcode.PAD,
    Opcode.CONCATENATE, Opcode.REVERSE, Opcode.IOTA, Opcode.DYNAMIC_SLICE,
    Opcode.DYNAMIC_UPDATE_SLICE, Opcode.REDUCE, Opcode.BITCAST_CONVERT, Opcode.GATHER,
    Opcode.COPY,
})  # fmt: skip


# Ops that have no GPU kernel yet and run as host fallbacks (docs/cuda-kernels.md). A dot whose
# operands are not one float type, and a bitcast-convert that changes the element width, also
# fall back (gemm_step.py, the element generators).
HOST_FALLBACK_OPS = frozenset({
    "after-all", "cholesky", "conditional", "convolution", "custom-call", "fft", "opt-barrier",
    "partition-id", "reduce-window", "replica-id", "rng-bit-generator", "scatter",
    "select-and-scatter", "sort", "topk", "triangular-solve", "while",
})  # fmt: skip
PARTLY_NATIVE_OPS = frozenset({"dot", "bitcast-convert"})


def wrap_instruction(instr: Instruction) -> Computation:
    """A computation holding just ``instr`` on fresh parameters (a one-op "fusion")."""
    comp = Computation(f"wrapped_{instr.name}")
    params = [comp.add_instruction(Instruction(Opcode.PARAMETER, o.shape, (), name=f"p{i}",
                                               parameter_number=i))
              for i, o in enumerate(instr.operands)]  # fmt: skip
    clone = comp.add_instruction(instr.clone_with(operands=params))
    if clone.shape.is_tuple:  # a variadic reduce: its leaves, as a fusion's root would be
        leaves = [comp.add_instruction(Instruction(Opcode.GET_TUPLE_ELEMENT, e, [clone],
                                                   {"index": k}))
                  for k, e in enumerate(clone.shape.elements)]  # fmt: skip
        clone = comp.add_instruction(Instruction(Opcode.TUPLE, clone.shape, leaves))
    comp.set_root(clone)
    return comp


def kernel_computation(instr: Instruction) -> tuple[Computation | None, str]:
    """The computation ``instr``'s kernel computes, or None and why it has none."""
    if instr.opcode is Opcode.FUSION:
        comp = instr.attrs["calls"]
    elif instr.is_elementwise or instr.opcode in KERNEL_OPS:
        arrays = instr.shape.is_array or (instr.opcode is Opcode.REDUCE and all(
            e.is_array for e in instr.shape.elements))  # fmt: skip
        if not all(o.shape.is_array for o in instr.operands) or not arrays:
            return None, "its operands or result are not all arrays"
        comp = wrap_instruction(instr)
    else:
        return None, f"no GPU kernel schedule for {instr.opcode.value} yet"
    try:
        schedule, why = choose_schedule(comp)
    except HlortError as err:
        return None, err.message
    return (comp, "") if schedule is not None else (None, why)


class _Slots:
    """Buffer slots from buffer assignment: one per logical buffer, plus output copies."""

    def __init__(self, assignment: BufferAssignment):
        self.assignment = assignment
        self.slots: list[BufferSlot] = []
        self._by_buffer: dict[int, int] = {}
        self.arena_end = assignment.arena_size

    def of(self, instr: Instruction) -> list[int]:
        return [self._slot(s.buffer) for s in self.assignment.slices(instr)]

    def _slot(self, buf: LogicalBuffer) -> int:
        got = self._by_buffer.get(id(buf))
        if got is not None:
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
        kind = buf.kind if buf.kind != "external" else "temp"
        label = instr.name + (str(list(buf.index)) if buf.index else "")
        slot = BufferSlot(len(self.slots), kind, max(buf.size, 0), SLOT_ALIGNMENT,
                          leaf.dtype.name, tuple(leaf.dims), buf.offset,
                          buf.parameter_number, data, label)  # fmt: skip
        self.slots.append(slot)
        self._by_buffer[id(buf)] = slot.id
        return slot.id

    def scratch(self, kernel) -> tuple[int, ...]:
        """Slots for a kernel's scratch buffers (temps after the arena) and its counters (a
        constant of zeros that the kernel restores)."""
        out = []
        for size in kernel.scratch:
            offset = -(-self.arena_end // SLOT_ALIGNMENT) * SLOT_ALIGNMENT
            self.arena_end = offset + size
            out.append(self._add(BufferSlot(len(self.slots), "temp", size, SLOT_ALIGNMENT, "u8",
                                            (size,), offset, label=f"{kernel.name} scratch")))
        if kernel.counter_bytes:
            size = kernel.counter_bytes
            out.append(self._add(BufferSlot(len(self.slots), "constant", size, SLOT_ALIGNMENT,
                                            "u8", (size,), constant=bytes(size),
                                            label=f"{kernel.name} counters")))  # fmt: skip
        return tuple(out)

    def _add(self, slot: BufferSlot) -> int:
        self.slots.append(slot)
        return slot.id

    def fresh_output(self, like: BufferSlot) -> int:
        offset = -(-self.arena_end // SLOT_ALIGNMENT) * SLOT_ALIGNMENT
        self.arena_end = offset + like.size
        slot = BufferSlot(len(self.slots), "output", like.size, SLOT_ALIGNMENT, like.dtype,
                          like.dims, offset, label=f"{like.label} (output copy)")  # fmt: skip
        self.slots.append(slot)
        return slot.id


def emits_one_kernel(comp: Computation) -> bool:
    """Whether a fused computation would become one GPU kernel (the fusion passes ask)."""
    try:
        return choose_schedule(comp)[0] is not None
    except HlortError:
        return False


def gpu_pass_options() -> PassOptions:
    """The pipeline a GPU plugin asks for: row epilogues join their reductions (softmax is one
    kernel), and only fusions that one kernel schedule covers are made."""
    return PassOptions(policy=FusionPolicy(row_epilogue_fusion=True, can_emit=emits_one_kernel))


def compile_gpu_program(module: Module, target: GpuTarget, donated=(),
                        report: FallbackReport | None = None, apply_policy: bool = True,
                        kernel_prefix: str = "") -> GpuProgram:  # fmt: skip
    """Compile the optimized, scheduled ``module`` for ``target``. The fallback report is
    applied (HLORT_FALLBACK: raise, warn or allow) unless ``apply_policy`` is False (the offline
    checks count fallbacks instead); ``kernel_prefix`` starts every kernel's name (programs
    whose PTX is assembled together need distinct names)."""
    entry = module.entry
    assignment = assign_buffers(module, donated=donated, alignment=SLOT_ALIGNMENT,
                                in_place=False)  # fmt: skip
    slots = _Slots(assignment)
    parameters = [s for p in sorted(entry.parameters, key=lambda p: p.parameter_number)
                  for s in slots.of(p)]  # fmt: skip
    kernels = GpuKernelModule(target, f"{module.name}_gpu")
    infos: list[KernelInfo] = []
    steps: list = []
    report = report or FallbackReport(target.name, module.name)
    for instr in assignment.schedule:
        if instr.opcode in _STRUCTURAL:
            continue
        if instr.opcode is Opcode.DOT:
            spec, why = gemm_spec(instr)
            if spec is not None:
                args = tuple(slots.of(instr.operands[0]) + slots.of(instr.operands[1]) +
                             slots.of(instr))  # fmt: skip
                steps.append(LibraryCall("gemm", args, spec, instr.name))
                continue
        else:
            comp, why = kernel_computation(instr)
            if comp is not None:
                name = f"{kernel_prefix}k{len(infos)}_{_symbol(instr.name)}"
                kernel = kernels.add(name, comp)
                args = tuple(s for o in instr.operands for s in slots.of(o)) + tuple(
                    slots.of(instr)) + slots.scratch(kernel)  # fmt: skip
                infos.append(KernelInfo(name, kernel.schedule, kernel.num_args, instr.name))
                launch = kernel.launch
                steps.append(KernelLaunch(name, launch.grid3(), launch.block3(),
                                          launch.shared_bytes, args, instr.name))  # fmt: skip
                continue
        inputs = tuple(s for o in instr.operands for s in slots.of(o))
        kind = instr.opcode.value
        if instr.opcode is Opcode.FUSION:
            kind = f"fusion({instr.attrs.get('kind', '')})".replace("FusionKind.", "")
        report.add(instr.name, kind, why)
        steps.append(HostFallback(instr.name, kind, why, host_fallback_module(module, instr),
                                  inputs, tuple(slots.of(instr))))  # fmt: skip
    outputs, donation = _outputs(entry, assignment, slots, steps)
    if apply_policy:
        report.apply()
    binary = kernels.compile() if infos else b""
    program = GpuProgram(module.name, target.name, target.triple, target.binary_format,
                         kernels.ir_text(), binary, infos, slots.slots, steps, parameters,
                         outputs, entry.root.shape.is_tuple, slots.arena_end,
                         donation)  # fmt: skip
    program.check()
    return program


def _outputs(entry: Computation, assignment: BufferAssignment, slots: _Slots,
             steps: list) -> tuple[list[int], dict[int, int]]:  # fmt: skip
    """The output slots (copies added where an output is a parameter, a constant or a repeat)
    and the donation map from buffer assignment's output aliases."""
    leaf_numbers = {index: k for k, (index, _) in enumerate(_leaf_indices(entry.root.shape))}
    aliases = {leaf_numbers[i]: p for i, p in assignment.output_aliases.items()}
    outputs, seen = [], set()
    for k, sid in enumerate(slots.of(entry.root)):
        slot = slots.slots[sid]
        aliased = k in aliases and slot.kind == "parameter"
        if (slot.kind in ("parameter", "constant") and not aliased) or sid in seen:
            new = slots.fresh_output(slot)
            steps.append(Copy(sid, new, slot.size, label=f"output {k}"))
            sid = new
        seen.add(sid)
        outputs.append(sid)
    donation = {p: k for k, p in aliases.items()}
    return outputs, donation


def _leaf_indices(shape, prefix=()):
    if shape.is_tuple:
        out = []
        for k, e in enumerate(shape.elements):
            out.extend(_leaf_indices(e, prefix + (k,)))
        return out
    return [(prefix, shape)] if shape.is_array else []


def _symbol(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


__all__ = ["HOST_FALLBACK_OPS", "PARTLY_NATIVE_OPS", "compile_gpu_program", "emits_one_kernel",
           "gpu_pass_options", "kernel_computation",
           "wrap_instruction"]  # fmt: skip
