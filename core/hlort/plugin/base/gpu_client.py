"""GpuClient and GpuPlugin: a GPU backend written once over a :class:`GpuDriver`.

A GPU plugin subclasses :class:`GpuClient` and says three things: which driver to open
(``create_driver``), how to compile a module for a target (``compile_program``, returning
gpukern's :class:`GpuProgram`) and how to run library calls (``library_runner``, e.g. cuBLAS).
Everything else (devices, transfers, peer copies, async launches, donation, memory stats,
serialization keyed by the GPU target) is here and in the other ``gpu_*`` modules.

Compiling needs no GPU: :class:`CompileOnlyGpuClient` (``GpuPlugin.create_compile_only_client``)
has one placeholder device for a named target (``sm_90``); it compiles, dumps and serializes, and
refuses buffers with UNAVAILABLE.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hlort.codegen.gpu.program import GpuProgram
from hlort.errors import HlortError, Unavailable, Unimplemented
from hlort.plugin.api import Buffer, Device, MemorySpace
from hlort.plugin.base.gpu_buffer import transfer_to_gpu
from hlort.plugin.base.gpu_device import GpuDevice
from hlort.plugin.base.gpu_driver import GpuDeviceProperties, GpuDriver
from hlort.plugin.base.gpu_executable import (
    GpuExecutable,
    check_blob_target,
    unpack_payload,
)
from hlort.plugin.base.gpu_plugin import GpuPlugin
from hlort.plugin.base.gpu_program_runner import LibraryRunner
from hlort.plugin.base.hlo_text import parse_printed_hlo
from hlort.plugin.base.serialization import unframe_executable
from hlort.plugin.base.simple_client import SimpleClient
from hlort.plugin.base.simple_device import SimpleDevice
from hlort.plugin.base.simple_executable import Placement
from hlort.plugin.options import CompileOptions, HostBufferSemantics


class GpuClient(SimpleClient):
    """The devices a driver sees, as ``platform:0..N-1`` (in the driver's order)."""

    executable_class: ClassVar[type[GpuExecutable]] = GpuExecutable

    def __init__(self, plugin=None, options: Mapping[str, Any] | None = None, **kw):
        self.driver = self.create_driver(options or {})
        try:
            super().__init__(plugin, options, **kw)
        except BaseException:
            self.driver.close()
            raise

    # -- what a GPU plugin provides ------------------------------------------------------------
    @abc.abstractmethod
    def create_driver(self, options: Mapping[str, Any]) -> GpuDriver:
        """Open the driver; UNAVAILABLE with the reason and the fix when it cannot start."""

    @abc.abstractmethod
    def compile_program(self, module, options: CompileOptions, target: str) -> GpuProgram:
        """Compile an optimized module for ``target`` (``"sm_90"``); needs no device. Host
        fallbacks are steps of the program; the executable applies HLORT_FALLBACK to them."""

    def library_runner(self, program: GpuProgram) -> LibraryRunner | None:
        """What runs the program's library calls, or None (then a program with one is
        UNIMPLEMENTED at compile); loaded only when the program has library calls."""
        return None

    def close_library_runners(self) -> None:
        """Release the library runners' per-device state (handles bound to the devices'
        streams); called by ``close`` once no library call is queued or running and the
        streams have finished, before the streams are destroyed."""

    def pass_options(self):
        """The core pipeline GPU kernels want (hlort.codegen.gpu.compiler.gpu_pass_options):
        row epilogues fused into their reductions, fusions only where one kernel covers them."""
        from hlort.codegen.gpu.compiler import gpu_pass_options

        return gpu_pass_options()

    # -- devices -------------------------------------------------------------------------------
    def create_devices(self) -> Sequence[SimpleDevice]:
        count = self.driver.device_count()
        if count < 1:
            raise Unavailable(
                f"{self.platform_name}: the {self.driver.name} driver sees no "
                f"device; check `nvidia-smi`/`rocm-smi` and the device "
                f"visibility variables"
            )
        return [GpuDevice(self, k, self.driver, self.driver.properties(k)) for k in range(count)]

    @property
    def platform_version(self) -> str:
        base = super().platform_version
        archs = sorted({d.properties.arch for d in self._gpu_devices()})
        return f"{base}; {self.driver.name} {self.driver.version()}; {','.join(archs)}"

    def _gpu_devices(self) -> list[GpuDevice]:
        return [d for d in self._devices if isinstance(d, GpuDevice)]

    def target_for(self, placements: Sequence[Placement]) -> str:
        """The one GPU target the placements' devices share."""
        targets = sorted({_arch_of(p.device) for p in placements})
        if len(targets) != 1:
            raise Unimplemented(
                f"{self.platform_name}: one executable on devices of different "
                f"architectures {targets}; place it on devices of one kind "
                f"(CompileOptions.device_assignment)"
            )
        return targets[0]

    # -- buffers and executables ---------------------------------------------------------------
    def buffer_from_host(
        self,
        array: np.ndarray,
        device: Device,
        semantics: HostBufferSemantics = HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL,
        *,
        memory_space: MemorySpace | None = None,
    ) -> Buffer:
        target = self.own_device(device)
        if memory_space is not None and memory_space not in target.memory_spaces():
            from hlort.errors import InvalidArgument

            raise InvalidArgument(
                f"memory space {memory_space!r} is not addressable by "
                f"{self.platform_name}:{target.id}"
            )
        if not isinstance(target, GpuDevice):
            raise Unavailable(
                f"{self.platform_name}:{target.id} is a compile-only device "
                f"({target.kind}); run on a machine with the GPU"
            )
        return transfer_to_gpu(target, array, semantics)

    def deserialize_executable(self, data: bytes, options: CompileOptions | None = None):
        header, payload = unframe_executable(data, platform=self.platform_name)
        if options is None:
            options = CompileOptions.from_dict(header.metadata.get("compile_options", {}))
        text, program = unpack_payload(payload, header.name)
        placements = self.resolve_placements(options)
        where = ", ".join(f"{self.platform_name}:{p.device.id}" for p in placements)
        check_blob_target(header, program, self.target_for(placements), where)
        module = parse_printed_hlo(text, source_name=f"<serialized {header.name}>")
        exe = self.executable_class(self, module, options, placements, program=program)
        exe._fingerprint = header.fingerprint
        return exe

    def close(self) -> None:
        if self._closed:
            return
        super().close()  # the work queues drain: nothing is enqueued on a stream any more
        for device in self._gpu_devices():
            try:
                device.synchronize()
            except HlortError:
                pass  # the device's error is its events'; the handles go all the same
        self.close_library_runners()
        for device in self._gpu_devices():
            try:
                device.close()
            except HlortError:
                pass  # a failed device must not keep the others open
        self.driver.close()


class CompileOnlyDevice(SimpleDevice):
    """A placeholder for a GPU of one target: compiles are placed here; buffers are refused."""

    host_memory = False
    supports_zero_copy = False

    def __init__(self, client: SimpleClient, target: str):
        super().__init__(client, 0, f"{target} (compile only)", attributes={"arch": target})
        self.arch = target

    def allocate(self, shape):
        raise Unavailable(
            f"{self.client.platform_name}:0 is a compile-only device for "
            f"{self.arch}; run on a machine with the GPU"
        )


def _arch_of(device: SimpleDevice) -> str:
    if isinstance(device, GpuDevice):
        return device.properties.arch
    return str(getattr(device, "arch", ""))


class CompileOnlyGpuClient(GpuClient):
    """Compiles for a named target with no driver and no device (``hlort compile --target``)."""

    def __init__(self, plugin, target: str, options: Mapping[str, Any] | None = None):
        self.target = target
        super().__init__(plugin, options)

    def create_driver(self, options):
        return _NoDriver()

    def create_devices(self) -> Sequence[SimpleDevice]:
        return [CompileOnlyDevice(self, self.target)]

    @property
    def platform_version(self) -> str:
        return f"{SimpleClient.platform_version.fget(self)}; compile only; {self.target}"

    def library_runner(self, program: GpuProgram) -> LibraryRunner:
        """Library calls compile here (no library is needed to compile them) and never run."""
        return _refuse_library_call


def _refuse_library_call(device, call, blocks) -> None:
    raise Unavailable(
        f"library call {call.routine} cannot run on a compile-only client; "
        f"deserialize the executable on a machine with the GPU"
    )


class _NoDriver:
    """Stands where a compile-only client's driver would be; never called for work."""

    name = "none"

    def version(self) -> str:
        return "none"

    def close(self) -> None:
        pass


__all__ = [
    "CompileOnlyDevice",
    "CompileOnlyGpuClient",
    "GpuClient",
    "GpuDeviceProperties",
    "GpuPlugin",
]
