"""The HIP driver: the shared GPU runtime's driver protocol over hip-python.

Every call below is HIP's documented C API as hip-python exposes it: each function returns a
tuple whose first item is a ``hipError_t`` and whose others are the C function's out-parameters
(``hipMalloc(n) -> (err, ptr)``); device pointers are converted to plain ints, and host arrays
are passed as objects with the buffer protocol. HIP's current device is per host thread, so
each call that acts on a device selects it first (``hipSetDevice``); streams and events keep
the ordinal they were made for. Kernel arguments go through ``extra`` (HIP's kernarg buffer:
hip-python packs a tuple of ctypes values with their natural alignment).

Never run on AMD hardware here (no AMD GPU exists where hlort is tested): the calls are checked
against HIP's reference and, in tests, against a fake of hip-python's calling convention.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlort.errors import HlortError, Internal, InvalidArgument, NotFound, Unavailable
from hlort.plugin.base.gpu_driver import (
    GpuDeviceProperties,
    GpuDriver,
    GpuOutOfMemory,
    Handle,
    KernelArgument,
)
from hlort_rocm.runtime_messages import NO_RUNTIME, RUNTIME_FIX

_BAD_IMAGE = {
    "hipErrorInvalidImage",
    "hipErrorNoBinaryForGpu",
    "hipErrorInvalidKernelFile",
    "hipErrorSharedObjectInitFailed",
    "hipErrorInvalidSource",
}
_NO_DEVICE = {"hipErrorNoDevice", "hipErrorInvalidDevice", "hipErrorInsufficientDriver"}
_CTYPES = {
    np.dtype(np.int8): ctypes.c_int8,
    np.dtype(np.uint8): ctypes.c_uint8,
    np.dtype(np.int16): ctypes.c_int16,
    np.dtype(np.uint16): ctypes.c_uint16,
    np.dtype(np.int32): ctypes.c_int32,
    np.dtype(np.uint32): ctypes.c_uint32,
    np.dtype(np.int64): ctypes.c_int64,
    np.dtype(np.uint64): ctypes.c_uint64,
    np.dtype(np.float32): ctypes.c_float,
    np.dtype(np.float64): ctypes.c_double,
}


@dataclass(frozen=True)
class _OnDevice:
    """A stream, event or module handle with the device it belongs to."""

    ordinal: int
    raw: Any
    image: bytes | None = None  # a module keeps its code object alive


def _error_name(err: Any) -> str:
    return str(getattr(err, "name", err))


def kernel_arguments(arguments: Sequence[KernelArgument]) -> tuple:
    """The launch arguments as ctypes values: pointers as ``void*``, scalars at their width."""
    packed = []
    for k, arg in enumerate(arguments):
        if isinstance(arg, (bool, np.bool_)) or not isinstance(arg, (int, np.generic)):
            raise InvalidArgument(
                f"kernel argument {k} is {type(arg).__name__}; pass an int "
                f"device pointer or a NumPy scalar"
            )
        if isinstance(arg, int):
            packed.append(ctypes.c_void_p(arg))
        elif arg.dtype in _CTYPES:
            packed.append(_CTYPES[arg.dtype](arg.item()))
        else:
            raise InvalidArgument(
                f"kernel argument {k} has type {arg.dtype}, which no kernel takes by value"
            )
    return tuple(packed)


class HipDriver(GpuDriver):
    name = "hip-python"

    def __init__(self, hip_module: Any = None):
        if hip_module is None:
            from hip import hip as hip_module  # hip-python; imports without ROCm
        self._hip = hip_module
        self._lock = threading.Lock()
        self._peers: set[tuple[int, int]] = set()

    # -- calls ---------------------------------------------------------------------------------
    def _call(self, what: str, *args: Any) -> tuple:
        """``hip.<what>(*args)``, its out-values on success, an HlortError otherwise."""
        try:
            result = getattr(self._hip, what)(*args)
        except RuntimeError as err:
            if "dlopen" in str(err):
                raise Unavailable(f"{NO_RUNTIME}; {RUNTIME_FIX}") from None
            raise Internal(f"{what} failed: {err}") from None
        result = result if isinstance(result, tuple) else (result,)
        err, values = result[0], result[1:]
        name = _error_name(err)
        if name != "hipSuccess" and err != 0:
            raise self._error(what, name)
        return values

    def _error(self, what: str, name: str) -> HlortError:
        text = f"{what} failed: {name}"
        if name == "hipErrorOutOfMemory":
            return GpuOutOfMemory(
                f"{text} (device memory is full); delete buffers you no longer need"
            )
        if name in _NO_DEVICE:
            return Unavailable(f"{text}; check rocminfo and HIP_VISIBLE_DEVICES")
        if name in _BAD_IMAGE:
            return InvalidArgument(
                f"{text}: the code object does not load on this device; "
                f"compile for the device's gfx target"
            )
        if name == "hipErrorNotFound":
            return NotFound(text)
        return Internal(text)

    def select(self, ordinal: int) -> None:
        """Make ``ordinal`` the calling thread's current HIP device (rocBLAS uses it too)."""
        self._call("hipSetDevice", ordinal)

    # -- devices -------------------------------------------------------------------------------
    def version(self) -> str:
        (runtime,) = self._call("hipRuntimeGetVersion")
        (driver,) = self._call("hipDriverGetVersion")
        return f"HIP runtime {_hip_version(runtime)}, driver {_hip_version(driver)}"

    def device_count(self) -> int:
        try:
            (count,) = self._call("hipGetDeviceCount")
        except Unavailable as err:
            if "hipErrorNoDevice" in str(err):
                return 0
            raise
        return int(count)

    def properties(self, ordinal: int) -> GpuDeviceProperties:
        (props,) = self._call("hipGetDeviceProperties", ordinal)
        full_arch = _text(props.gcnArchName)  # "gfx90a:sramecc+:xnack-"
        arch = full_arch.split(":", 1)[0]  # the compiler target; code objects load in any mode
        bandwidth = 2.0 * props.memoryClockRate * 1e3 * props.memoryBusWidth / 8  # DDR, kHz
        bus = f"{props.pciDomainID:04x}:{props.pciBusID:02x}:{props.pciDeviceID:02x}.0"
        return GpuDeviceProperties(
            ordinal=ordinal,
            name=_text(props.name) or full_arch,
            arch=arch,
            total_memory=int(props.totalGlobalMem),
            multiprocessor_count=int(props.multiProcessorCount),
            warp_size=int(props.warpSize),
            max_threads_per_block=int(props.maxThreadsPerBlock),
            max_shared_memory_per_block=int(props.sharedMemPerBlock),
            peak_bandwidth_bytes_s=bandwidth,
            pci_bus_id=bus,
        )

    def can_access_peer(self, ordinal: int, peer: int) -> bool:
        (can,) = self._call("hipDeviceCanAccessPeer", ordinal, peer)
        if not can:
            return False
        with self._lock:
            if (ordinal, peer) not in self._peers:
                self.select(ordinal)
                try:
                    self._call("hipDeviceEnablePeerAccess", peer, 0)
                except Internal as err:
                    if "hipErrorPeerAccessAlreadyEnabled" not in str(err):
                        raise
                self._peers.add((ordinal, peer))
        return True

    # -- memory --------------------------------------------------------------------------------
    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        self.select(ordinal)
        (pointer,) = self._call("hipMalloc", int(nbytes))
        return int(pointer)

    def mem_free(self, ordinal: int, pointer: int) -> None:
        self.select(ordinal)
        self._call("hipFree", pointer)

    def mem_info(self, ordinal: int) -> tuple[int, int]:
        self.select(ordinal)
        free, total = self._call("hipMemGetInfo")
        return int(free), int(total)

    # -- streams and events --------------------------------------------------------------------
    def stream_create(self, ordinal: int) -> Handle:
        self.select(ordinal)
        (stream,) = self._call("hipStreamCreateWithFlags", self._hip.hipStreamNonBlocking)
        return _OnDevice(ordinal, stream)

    def stream_destroy(self, stream: Handle) -> None:
        self.select(stream.ordinal)
        self._call("hipStreamDestroy", stream.raw)

    def stream_synchronize(self, stream: Handle) -> None:
        self.select(stream.ordinal)
        self._call("hipStreamSynchronize", stream.raw)

    def stream_wait_event(self, stream: Handle, event: Handle) -> None:
        self.select(stream.ordinal)
        self._call("hipStreamWaitEvent", stream.raw, event.raw, 0)

    def event_create(self, ordinal: int, timing: bool = False) -> Handle:
        self.select(ordinal)
        flags = self._hip.hipEventDefault if timing else self._hip.hipEventDisableTiming
        (event,) = self._call("hipEventCreateWithFlags", flags)
        return _OnDevice(ordinal, event)

    def event_destroy(self, event: Handle) -> None:
        self.select(event.ordinal)
        self._call("hipEventDestroy", event.raw)

    def event_record(self, event: Handle, stream: Handle) -> None:
        self.select(stream.ordinal)
        self._call("hipEventRecord", event.raw, stream.raw)

    def event_query(self, event: Handle) -> bool:
        try:
            self._call("hipEventQuery", event.raw)
        except Internal as err:
            if "hipErrorNotReady" in str(err):
                return False
            raise
        return True

    def event_synchronize(self, event: Handle) -> None:
        self._call("hipEventSynchronize", event.raw)

    def event_elapsed_ms(self, start: Handle, end: Handle) -> float:
        (ms,) = self._call("hipEventElapsedTime", start.raw, end.raw)
        return float(ms)

    # -- copies --------------------------------------------------------------------------------
    def copy_h2d_async(self, pointer: int, host: np.ndarray, stream: Handle) -> None:
        if host.nbytes:
            self.select(stream.ordinal)
            self._call("hipMemcpyHtoDAsync", pointer, _contiguous(host), host.nbytes, stream.raw)

    def copy_d2h_async(self, host: np.ndarray, pointer: int, stream: Handle) -> None:
        if host.nbytes:
            if not (host.flags.c_contiguous and host.flags.writeable):
                raise InvalidArgument(
                    "a device-to-host copy needs a C-contiguous, writable host array"
                )
            self.select(stream.ordinal)
            self._call("hipMemcpyDtoHAsync", host, pointer, host.nbytes, stream.raw)

    def copy_d2d_async(self, dst: int, src: int, nbytes: int, stream: Handle) -> None:
        if nbytes:
            self.select(stream.ordinal)
            self._call("hipMemcpyDtoDAsync", dst, src, nbytes, stream.raw)

    def copy_peer_async(
        self, dst: int, dst_ordinal: int, src: int, src_ordinal: int, nbytes: int, stream: Handle
    ) -> None:
        if nbytes:
            self.select(stream.ordinal)
            self._call("hipMemcpyPeerAsync", dst, dst_ordinal, src, src_ordinal, nbytes, stream.raw)

    def memset_async(self, pointer: int, byte: int, nbytes: int, stream: Handle) -> None:
        if nbytes:
            self.select(stream.ordinal)
            self._call("hipMemsetD8Async", pointer, byte & 0xFF, nbytes, stream.raw)

    # -- code ----------------------------------------------------------------------------------
    def module_load(self, ordinal: int, image: bytes) -> Handle:
        image = bytes(image)
        self.select(ordinal)
        (module,) = self._call("hipModuleLoadData", image)
        return _OnDevice(ordinal, module, image)

    def module_unload(self, module: Handle) -> None:
        self.select(module.ordinal)
        self._call("hipModuleUnload", module.raw)

    def function(self, module: Handle, name: str) -> Handle:
        self.select(module.ordinal)
        try:
            (function,) = self._call("hipModuleGetFunction", module.raw, name.encode())
        except NotFound:
            raise NotFound(f"the code object has no kernel {name!r}") from None
        return _OnDevice(module.ordinal, function)

    def launch(
        self,
        function: Handle,
        grid: tuple[int, int, int],
        block: tuple[int, int, int],
        shared_bytes: int,
        stream: Handle,
        arguments: Sequence[KernelArgument],
    ) -> None:
        extra = kernel_arguments(arguments)
        self.select(stream.ordinal)
        self._call(
            "hipModuleLaunchKernel",
            function.raw,
            *grid,
            *block,
            shared_bytes,
            stream.raw,
            None,
            extra,
        )


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).split(b"\0", 1)[0].decode(errors="replace")
    return str(value).strip()


def _hip_version(number: int) -> str:
    """HIP encodes versions as major * 10^7 + minor * 10^5 + patch."""
    number = int(number)
    return f"{number // 10_000_000}.{number // 100_000 % 100}.{number % 100_000}"


def _contiguous(host: np.ndarray) -> np.ndarray:
    if not host.flags.c_contiguous:
        raise InvalidArgument("a host-to-device copy needs a C-contiguous host array")
    return host
