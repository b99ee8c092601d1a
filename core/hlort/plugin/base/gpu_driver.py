"""The GPU driver protocol: the few driver calls the shared GPU runtime needs, and no more.

Both GPU plugins implement :class:`GpuDriver` (CUDA on ``cuda-bindings`` or pycuda, ROCm on
hip-python); the client, devices, buffers and executables in ``gpu_*.py`` are written once
against it, and the tests run them on an in-process fake with host memory. Handles (streams,
events, modules, functions) are whatever the driver uses; the runtime never looks inside them.
Device pointers are plain ints. Every call is made with the device's ordinal or a handle made for
it, so a driver can keep its per-thread context state to itself (CUDA's current context).

Errors: a driver raises :class:`~hlort.errors.HlortError` with a PJRT code. Out of memory is
:class:`GpuOutOfMemory` (RESOURCE_EXHAUSTED), which the caching allocator catches to release its
cache and retry; a missing driver or device is UNAVAILABLE; a bad module image (wrong
architecture, unsupported PTX) is INVALID_ARGUMENT; anything else the driver reports is INTERNAL
naming the call and the driver's error name.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlort.errors import ResourceExhausted

Handle = Any
KernelArgument = int | np.generic
"""A launch argument: an ``int`` is a device pointer (64-bit); a NumPy scalar is passed by value
with its own width (``np.int32(n)``, ``np.int64(n)``, ``np.float32(x)``)."""


class GpuOutOfMemory(ResourceExhausted):
    """The driver could not allocate device memory (the allocator then frees its cache)."""


@dataclass(frozen=True)
class GpuDeviceProperties:
    """What the runtime and the compiler need to know about one device.

    ``arch`` is the compiler target the device runs (``"sm_90"``, ``"gfx90a"``): a serialized
    executable is keyed by it. ``compute_capability`` is CUDA's (major, minor), or None.
    ``peak_bandwidth_bytes_s`` is the theoretical DRAM bandwidth when the driver can tell (0 when
    not); benchmarks measure the real one.
    """

    ordinal: int
    name: str
    arch: str
    total_memory: int
    compute_capability: tuple[int, int] | None = None
    multiprocessor_count: int = 0
    warp_size: int = 32
    max_threads_per_block: int = 1024
    max_shared_memory_per_block: int = 48 << 10
    peak_bandwidth_bytes_s: float = 0.0
    pci_bus_id: str = ""

    def attributes(self) -> dict[str, str | int | float | bool]:
        """The facts ``hlort devices`` prints for the device."""
        attrs: dict[str, str | int | float | bool] = {"arch": self.arch}
        if self.compute_capability is not None:
            major, minor = self.compute_capability
            attrs["compute_capability"] = f"{major}.{minor}"
        attrs["memory_gib"] = round(self.total_memory / (1 << 30), 1)
        if self.multiprocessor_count:
            attrs["multiprocessors"] = self.multiprocessor_count
        if self.pci_bus_id:
            attrs["pci_bus_id"] = self.pci_bus_id
        return attrs


class GpuDriver(abc.ABC):
    """One GPU API (a driver), for every device it sees. Methods are thread-safe.

    Copies and launches are asynchronous on ``stream``; the host array of a copy must stay alive
    and unchanged (host-to-device) or untouched (device-to-host) until an event recorded after the
    copy has fired. ``event_synchronize`` and ``stream_synchronize`` raise the driver's error for
    failed work on that stream (a faulting kernel), as the driver reports it.
    """

    name: str = "gpu"
    """Which implementation this is (``"cuda-bindings"``, ``"pycuda"``, ``"fake"``)."""

    # -- devices -------------------------------------------------------------------------------
    @abc.abstractmethod
    def version(self) -> str:
        """The driver's version, as ``hlort devices`` shows it (``"CUDA driver 12.4"``)."""

    @abc.abstractmethod
    def device_count(self) -> int: ...

    @abc.abstractmethod
    def properties(self, ordinal: int) -> GpuDeviceProperties: ...

    def can_access_peer(self, ordinal: int, peer: int) -> bool:
        """Whether ``ordinal`` can copy directly from/to ``peer`` (then peer access is enabled)."""
        return False

    # -- memory --------------------------------------------------------------------------------
    @abc.abstractmethod
    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        """A device pointer to ``nbytes`` (> 0) bytes, 256-byte aligned; GpuOutOfMemory when not."""

    @abc.abstractmethod
    def mem_free(self, ordinal: int, pointer: int) -> None: ...

    @abc.abstractmethod
    def mem_info(self, ordinal: int) -> tuple[int, int]:
        """(free bytes, total bytes) of the device, as the driver sees them now."""

    # -- streams and events --------------------------------------------------------------------
    @abc.abstractmethod
    def stream_create(self, ordinal: int) -> Handle: ...

    @abc.abstractmethod
    def stream_destroy(self, stream: Handle) -> None: ...

    @abc.abstractmethod
    def stream_synchronize(self, stream: Handle) -> None: ...

    @abc.abstractmethod
    def stream_wait_event(self, stream: Handle, event: Handle) -> None:
        """Work enqueued on ``stream`` from now on starts after ``event`` fired (any device)."""

    @abc.abstractmethod
    def event_create(self, ordinal: int, timing: bool = False) -> Handle: ...

    @abc.abstractmethod
    def event_destroy(self, event: Handle) -> None: ...

    @abc.abstractmethod
    def event_record(self, event: Handle, stream: Handle) -> None: ...

    @abc.abstractmethod
    def event_query(self, event: Handle) -> bool:
        """True when the work before the record has finished; never blocks."""

    @abc.abstractmethod
    def event_synchronize(self, event: Handle) -> None: ...

    def event_elapsed_ms(self, start: Handle, end: Handle) -> float:
        """Milliseconds between two fired events made with ``timing=True`` (for benchmarks)."""
        from hlort.errors import Unimplemented

        raise Unimplemented(f"the {self.name} GPU driver does not time events")

    # -- copies --------------------------------------------------------------------------------
    @abc.abstractmethod
    def copy_h2d_async(self, pointer: int, host: np.ndarray, stream: Handle) -> None:
        """Copy the bytes of a C-contiguous host array to ``pointer``."""

    @abc.abstractmethod
    def copy_d2h_async(self, host: np.ndarray, pointer: int, stream: Handle) -> None:
        """Fill a C-contiguous, writable host array with the bytes at ``pointer``."""

    @abc.abstractmethod
    def copy_d2d_async(self, dst: int, src: int, nbytes: int, stream: Handle) -> None: ...

    @abc.abstractmethod
    def copy_peer_async(
        self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream: Handle
    ) -> None:
        """Copy between two devices' memories (through the host when there is no peer path)."""

    @abc.abstractmethod
    def memset_async(self, pointer: int, byte: int, nbytes: int, stream: Handle) -> None: ...

    # -- code ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def module_load(self, ordinal: int, image: bytes) -> Handle:
        """Load the compiler's target binary (PTX text, a cubin, a code object) on a device."""

    @abc.abstractmethod
    def module_unload(self, module: Handle) -> None: ...

    @abc.abstractmethod
    def function(self, module: Handle, name: str) -> Handle:
        """The kernel ``name`` of a loaded module; NOT_FOUND when the module has none."""

    @abc.abstractmethod
    def launch(
        self,
        function: Handle,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        stream: Handle,
        arguments: Sequence[KernelArgument],
    ) -> None: ...

    def close(self) -> None:
        """Release what the driver holds for the process (contexts); idempotent."""
        return None
