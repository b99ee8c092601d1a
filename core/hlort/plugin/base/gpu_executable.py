"""GpuExecutable: a compiled GpuProgram, launched asynchronously on a GPU's stream.

``compile`` asks the client's compiler for the program (or takes the one a serialized blob
carried, after checking it), applies the host-fallback policy to its counted fallbacks, and
checks the program against every device it is placed on. ``launch`` enqueues the steps and
returns an :class:`AsyncLaunch`: the outputs are ready when the stream event after the last step
fires. The serialized payload is the module's HLO text and the program's bytes (with its target
binary, PTX or a code object); the frame's metadata names the GPU target, so a blob made for
another architecture is refused with both named.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hlort.codegen.gpu.program import GpuProgram, HostFallback
from hlort.errors import DataLoss, InvalidArgument
from hlort.plugin.api import Buffer
from hlort.plugin.base.events import AsyncValue
from hlort.plugin.base.fallback_policy import FallbackRecord, FallbackReport
from hlort.plugin.base.gpu_buffer import as_gpu_buffer
from hlort.plugin.base.gpu_device import GpuDevice
from hlort.plugin.base.gpu_program_runner import (
    ProgramRunner,
    check_program_for_device,
    slot_shape,
)
from hlort.plugin.base.hlo_text import parse_printed_hlo, print_hlo
from hlort.plugin.base.serialization import FrameHeader, frame_executable
from hlort.plugin.base.simple_executable import AsyncLaunch, LaunchContext, SimpleExecutable
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS, ExecuteOptions

if TYPE_CHECKING:
    from hlort.ir.module import Module
    from hlort.plugin.base.gpu_client import GpuClient

PAYLOAD_MAGIC = b"HLGPUEX1"
_LEN = struct.Struct(">Q")


def pack_payload(hlo_text: str, program: GpuProgram) -> bytes:
    hlo = hlo_text.encode()
    return PAYLOAD_MAGIC + _LEN.pack(len(hlo)) + hlo + program.to_bytes()


def unpack_payload(payload: bytes, name: str) -> tuple[str, GpuProgram]:
    """(HLO text, program); DATA_LOSS for a payload that is not one of ours."""
    head = len(PAYLOAD_MAGIC) + _LEN.size
    if not payload.startswith(PAYLOAD_MAGIC) or len(payload) < head:
        raise DataLoss(f"serialized GPU executable {name!r} has no GPU payload; serialize it again")
    (size,) = _LEN.unpack_from(payload, len(PAYLOAD_MAGIC))
    if head + size > len(payload):
        raise DataLoss(f"serialized GPU executable {name!r} is truncated; serialize it again")
    try:
        text = payload[head : head + size].decode()
    except UnicodeDecodeError:
        raise DataLoss(f"serialized GPU executable {name!r} has damaged HLO text") from None
    return text, GpuProgram.from_bytes(payload[head + size :])


class GpuExecutable(SimpleExecutable):
    """Compiled by :meth:`GpuClient.compile_program`; runs on :class:`GpuDevice` s."""

    client: GpuClient
    program: GpuProgram

    def __init__(self, client, module, options, placements, program: GpuProgram | None = None):
        self._given_program = program
        super().__init__(client, module, options, placements)

    def compile(self) -> None:
        program = self._given_program
        if program is None:
            target = self.client.target_for(self.placements)
            program = self.client.compile_program(self.module, self.options, target)
        program.check()
        self._check_boundary(program)
        for placement in self.placements:
            if isinstance(placement.device, GpuDevice):
                check_program_for_device(program, placement.device)
        self.program = program
        # HLORT_FALLBACK, once, for a fresh compile and a deserialized blob alike
        report = FallbackReport(self.client.platform_name, self.name)
        for step in program.fallbacks:
            report.add(step.instruction, step.opcode, step.reason)
        report.apply()
        self.runner = ProgramRunner(program, self.client.library_runner(program))

    def _check_boundary(self, program: GpuProgram) -> None:
        """The program's parameter and output slots are the executable's shapes (a blob's HLO
        and program could disagree; a kernel must never see a buffer smaller than its slot)."""
        for what, slots, shapes in (
            ("parameter", program.parameters, self.parameter_shapes),
            ("output", program.outputs, self.output_shapes),
        ):
            if len(slots) != len(shapes):
                raise InvalidArgument(
                    f"GPU program {program.name!r} has {len(slots)} {what} "
                    f"slot(s), the module {len(shapes)}; recompile it"
                )
            for k, (slot_id, shape) in enumerate(zip(slots, shapes, strict=True)):
                slot = program.slot(slot_id)
                if slot_shape(program, slot_id) != shape or slot.size < shape.nbytes:
                    raise InvalidArgument(
                        f"GPU program {program.name!r}: {what} {k} is slot {slot_id} "
                        f"({slot.dtype}{list(slot.dims)}, {slot.size} bytes), the module's is "
                        f"{shape}; recompile it"
                    )

    def launch(self, device: GpuDevice, arguments: list, ctx: LaunchContext) -> AsyncLaunch:
        kept = set(ctx.options.non_donatable_input_indices)
        donated = {i for i in self.options.donated_arguments if i not in kept}
        outputs = self.runner.run(device, arguments, donated, ctx)

        def completion() -> AsyncValue:
            return device.after_stream(AsyncValue(f"launch of {self.name!r} on {device.where}"))

        return AsyncLaunch(outputs, completion)

    def execute(
        self,
        arguments: Sequence[Sequence[Buffer]],
        options: ExecuteOptions = DEFAULT_EXECUTE_OPTIONS,
    ) -> list[list[Buffer]]:
        results = super().execute(arguments, options)
        return [[as_gpu_buffer(b) for b in row] for row in results]

    def fallbacks(self) -> list[FallbackRecord]:
        return [FallbackRecord(s.instruction, s.opcode, s.reason) for s in self.program.fallbacks]

    def host_fallback_steps(self) -> list[HostFallback]:
        return self.program.fallbacks

    def artifacts(self) -> Mapping[str, str | bytes]:
        program = self.program
        suffix = {"ptx": "ptx", "hsaco": "hsaco"}.get(program.binary_format, "bin")
        binary: str | bytes = program.binary
        if program.binary_format == "ptx":
            binary = program.binary.rstrip(b"\0").decode(errors="replace")
        return {
            "kernels.ll": program.llvm_ir,
            f"kernels.{suffix}": binary,
            "gpu_program.txt": describe_program(program),
        }

    def delete(self) -> None:
        self.runner.unload()

    # -- serialization -------------------------------------------------------------------------
    def serialize_payload(self) -> bytes:
        return pack_payload(print_hlo(self.module), self.program)

    @classmethod
    def module_from_payload(cls, payload: bytes, header: FrameHeader) -> Module:
        text, _program = unpack_payload(payload, header.name)
        return parse_printed_hlo(text, source_name=f"<serialized {header.name}>")

    def serialize(self) -> bytes:
        header = FrameHeader(
            platform=self.client.platform_name,
            platform_version=self.client.platform_version,
            fingerprint=self.fingerprint(),
            name=self.name,
            metadata={"compile_options": self.options.to_dict(), "gpu_target": self.program.target},
        )
        return frame_executable(header, self.serialize_payload())


def check_blob_target(header: FrameHeader, program: GpuProgram, target: str, where: str) -> None:
    """INVALID_ARGUMENT naming both targets when a blob was compiled for another GPU; DATA_LOSS
    when the blob's header and its program disagree on the target (a damaged blob)."""
    stored = str(header.metadata.get("gpu_target", program.target))
    if stored != program.target:
        raise DataLoss(
            f"serialized GPU executable {header.name!r} says target {stored} but "
            f"holds a program for {program.target}; serialize it again"
        )
    if stored != target:
        raise InvalidArgument(
            f"serialized GPU executable {header.name!r} was compiled for {stored}; {where} is "
            f"{target}; compile the module again on this machine (or ahead of time with "
            f"`hlort compile --target {target}`)"
        )


def describe_program(program: GpuProgram) -> str:
    """The program as text for people (``--dump-dir`` writes it as NAME.gpu_program.txt)."""
    lines = [
        f"gpu program {program.name} for {program.target} ({program.triple}, "
        f"{program.binary_format}, {len(program.binary)} bytes)",
        f"stats {program.stats()}",
    ]
    for slot in program.slots:
        lines.append(
            f"slot {slot.id}: {slot.kind} {slot.dtype}{list(slot.dims)} {slot.size}B {slot.label}"
        )
    for step in program.steps:
        lines.append(f"step {_describe_step(step)}")
    lines.append(
        f"parameters {program.parameters} outputs {program.outputs} donation {program.donation}"
    )
    return "\n".join(lines) + "\n"


def _describe_step(step: Any) -> str:
    if isinstance(step, HostFallback):
        return (
            f"host-fallback {step.instruction} ({step.opcode}) {list(step.inputs)} -> "
            f"{list(step.outputs)}: {step.reason}"
        )
    return repr(step)
