"""The CUDA driver on NVIDIA's ``cuda-bindings`` (``cuda.bindings.driver``): the default driver.

``cuda-bindings`` is a binary wheel that imports without a driver; ``libcuda.so.1`` is opened by
its first call (``cuInit``). Each device uses its primary context, made current on the calling
thread before every call (the driver is asked which context is current: another client or a
library may have changed it). Device pointers are ints; streams, events, modules and functions
are wrapped with the ordinal they belong to. Every CUresult other than success becomes an
HlortError (cuda_errors.py).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlort.plugin.base.gpu_driver import GpuDeviceProperties, GpuDriver, KernelArgument
from hlort_cuda.cuda_errors import cuda_error
from hlort_cuda.targets import arch_of_capability, peak_bandwidth


@dataclass(frozen=True, eq=False)
class _Handle:
    ordinal: int
    handle: Any


class CudaBindingsDriver(GpuDriver):
    name = "cuda-bindings"

    def __init__(self, cu=None):
        """``cu`` stands in for ``cuda.bindings.driver`` in tests (default: the real module)."""
        if cu is None:
            from cuda.bindings import driver as cu  # heavy: only when a client starts
        self.cu = cu
        self._call("cuInit", 0)
        self._contexts: dict[int, Any] = {}
        self._lock = threading.Lock()
        self._peers: set[tuple[int, int]] = set()
        count = self._call("cuDeviceGetCount")
        self._devices = [self._call("cuDeviceGet", k) for k in range(count)]

    # -- plumbing ------------------------------------------------------------------------------
    def _call(self, name: str, *args):
        result = getattr(self.cu, name)(*args)
        err, values = result[0], result[1:]
        if err != self.cu.CUresult.CUDA_SUCCESS:
            raise cuda_error(name, int(err), self._error_name(err))
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def _error_name(self, err) -> str:
        try:
            status, text = self.cu.cuGetErrorName(err)
            return text.decode() if status == self.cu.CUresult.CUDA_SUCCESS else str(err)
        except Exception:  # noqa: BLE001 - naming the error must never fail
            return str(err)

    def _activate(self, ordinal: int) -> None:
        """Make the device's primary context current on this thread. The current context is
        asked each time (a thread-local read in the driver), not remembered: another client,
        cuBLAS or another library in the process may have made another device's current."""
        with self._lock:
            ctx = self._contexts.get(ordinal)
            if ctx is None:
                ctx = self._call("cuDevicePrimaryCtxRetain", self._devices[ordinal])
                self._contexts[ordinal] = ctx
        if self._call("cuCtxGetCurrent") != ctx:
            self._call("cuCtxSetCurrent", ctx)

    def _attr(self, ordinal: int, name: str) -> int:
        attr = getattr(self.cu.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(self._call("cuDeviceGetAttribute", attr, self._devices[ordinal]))

    # -- devices -------------------------------------------------------------------------------
    def version(self) -> str:
        v = int(self._call("cuDriverGetVersion"))
        return f"CUDA driver {v // 1000}.{v % 1000 // 10}"

    def device_count(self) -> int:
        return len(self._devices)

    def properties(self, ordinal: int) -> GpuDeviceProperties:
        dev = self._devices[ordinal]
        name = self._call("cuDeviceGetName", 256, dev).split(b"\0")[0].decode()
        major = self._attr(ordinal, "COMPUTE_CAPABILITY_MAJOR")
        minor = self._attr(ordinal, "COMPUTE_CAPABILITY_MINOR")
        try:  # informational; CUDA 13 deprecates the memory clock attribute
            clock_khz = self._attr(ordinal, "MEMORY_CLOCK_RATE")
            bus_bits = self._attr(ordinal, "GLOBAL_MEMORY_BUS_WIDTH")
        except Exception:  # noqa: BLE001
            clock_khz = bus_bits = 0
        try:
            bus_id = self._call("cuDeviceGetPCIBusId", 32, dev).split(b"\0")[0].decode()
        except Exception:  # noqa: BLE001 - informational only
            bus_id = ""
        return GpuDeviceProperties(
            ordinal=ordinal,
            name=name,
            arch=arch_of_capability(major, minor),
            total_memory=int(self._call("cuDeviceTotalMem", dev)),
            compute_capability=(major, minor),
            multiprocessor_count=self._attr(ordinal, "MULTIPROCESSOR_COUNT"),
            warp_size=self._attr(ordinal, "WARP_SIZE"),
            max_threads_per_block=self._attr(ordinal, "MAX_THREADS_PER_BLOCK"),
            max_shared_memory_per_block=self._attr(ordinal, "MAX_SHARED_MEMORY_PER_BLOCK"),
            peak_bandwidth_bytes_s=peak_bandwidth(clock_khz, bus_bits),
            pci_bus_id=bus_id,
        )

    def can_access_peer(self, ordinal: int, peer: int) -> bool:
        return bool(
            self._call("cuDeviceCanAccessPeer", self._devices[ordinal], self._devices[peer])
        )

    def _enable_peer(self, ordinal: int, peer: int) -> None:
        if (ordinal, peer) in self._peers or ordinal == peer:
            return
        if self.can_access_peer(ordinal, peer):
            self._activate(peer)  # make sure the peer's context exists
            self._activate(ordinal)
            result = self.cu.cuCtxEnablePeerAccess(self._contexts[peer], 0)
            already = self.cu.CUresult.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
            if result[0] not in (self.cu.CUresult.CUDA_SUCCESS, already):
                raise cuda_error(
                    "cuCtxEnablePeerAccess", int(result[0]), self._error_name(result[0])
                )
        self._peers.add((ordinal, peer))

    # -- memory --------------------------------------------------------------------------------
    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        self._activate(ordinal)
        return int(self._call("cuMemAlloc", nbytes))

    def mem_free(self, ordinal: int, pointer: int) -> None:
        self._activate(ordinal)
        self._call("cuMemFree", pointer)

    def mem_info(self, ordinal: int) -> tuple[int, int]:
        self._activate(ordinal)
        free, total = self._call("cuMemGetInfo")
        return int(free), int(total)

    # -- streams and events --------------------------------------------------------------------
    def stream_create(self, ordinal: int) -> _Handle:
        self._activate(ordinal)
        flags = self.cu.CUstream_flags.CU_STREAM_NON_BLOCKING
        return _Handle(ordinal, self._call("cuStreamCreate", flags))

    def stream_destroy(self, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuStreamDestroy", stream.handle)

    def stream_synchronize(self, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuStreamSynchronize", stream.handle)

    def stream_wait_event(self, stream: _Handle, event: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuStreamWaitEvent", stream.handle, event.handle, 0)

    def event_create(self, ordinal: int, timing: bool = False) -> _Handle:
        self._activate(ordinal)
        flags = (
            self.cu.CUevent_flags.CU_EVENT_DEFAULT
            if timing
            else self.cu.CUevent_flags.CU_EVENT_DISABLE_TIMING
        )
        return _Handle(ordinal, self._call("cuEventCreate", flags))

    def event_destroy(self, event: _Handle) -> None:
        self._activate(event.ordinal)
        self._call("cuEventDestroy", event.handle)

    def event_record(self, event: _Handle, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuEventRecord", event.handle, stream.handle)

    def event_query(self, event: _Handle) -> bool:
        self._activate(event.ordinal)
        (err,) = self.cu.cuEventQuery(event.handle)
        if err == self.cu.CUresult.CUDA_ERROR_NOT_READY:
            return False
        if err != self.cu.CUresult.CUDA_SUCCESS:
            raise cuda_error("cuEventQuery", int(err), self._error_name(err))
        return True

    def event_synchronize(self, event: _Handle) -> None:
        self._activate(event.ordinal)
        self._call("cuEventSynchronize", event.handle)

    def event_elapsed_ms(self, start: _Handle, end: _Handle) -> float:
        self._activate(start.ordinal)
        return float(self._call("cuEventElapsedTime", start.handle, end.handle))

    # -- copies --------------------------------------------------------------------------------
    def copy_h2d_async(self, pointer: int, host: np.ndarray, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuMemcpyHtoDAsync", pointer, host.ctypes.data, host.nbytes, stream.handle)

    def copy_d2h_async(self, host: np.ndarray, pointer: int, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuMemcpyDtoHAsync", host.ctypes.data, pointer, host.nbytes, stream.handle)

    def copy_d2d_async(self, dst: int, src: int, nbytes: int, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuMemcpyDtoDAsync", dst, src, nbytes, stream.handle)

    def copy_peer_async(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream) -> None:
        self._enable_peer(dst_ordinal, src_ordinal)
        self._activate(stream.ordinal)
        self._call(
            "cuMemcpyPeerAsync",
            dst,
            self._contexts[dst_ordinal],
            src,
            self._contexts[src_ordinal],
            nbytes,
            stream.handle,
        )

    def memset_async(self, pointer: int, byte: int, nbytes: int, stream: _Handle) -> None:
        self._activate(stream.ordinal)
        self._call("cuMemsetD8Async", pointer, byte, nbytes, stream.handle)

    # -- code ----------------------------------------------------------------------------------
    def module_load(self, ordinal: int, image: bytes) -> _Handle:
        self._activate(ordinal)
        data = bytes(image)
        if not data.endswith(b"\0"):
            data += b"\0"  # PTX must be NUL-terminated; a cubin/fatbin ignores the extra byte
        return _Handle(ordinal, self._call("cuModuleLoadData", data))

    def module_unload(self, module: _Handle) -> None:
        self._activate(module.ordinal)
        self._call("cuModuleUnload", module.handle)

    def function(self, module: _Handle, name: str) -> _Handle:
        self._activate(module.ordinal)
        return _Handle(
            module.ordinal, self._call("cuModuleGetFunction", module.handle, name.encode())
        )

    def launch(
        self,
        function: _Handle,
        grid,
        block,
        shared_bytes: int,
        stream: _Handle,
        arguments: Sequence[KernelArgument],
    ) -> None:
        self._activate(stream.ordinal)
        values = [_as_ctype(a) for a in arguments]
        pointers = (ctypes.c_void_p * max(1, len(values)))(
            *[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p) for v in values]
        )
        self._call(
            "cuLaunchKernel",
            function.handle,
            *grid,
            *block,
            shared_bytes,
            stream.handle,
            ctypes.addressof(pointers) if values else 0,
            0,
        )

    def make_current(self, ordinal: int) -> None:
        self._activate(ordinal)

    def native_stream(self, stream: _Handle) -> int:
        return int(stream.handle)

    def close(self) -> None:
        with self._lock:
            contexts, self._contexts = self._contexts, {}
        for ordinal in contexts:
            try:
                self._call("cuDevicePrimaryCtxRelease", self._devices[ordinal])
            except Exception:  # noqa: BLE001 - closing must not fail halfway
                pass


def _as_ctype(argument: KernelArgument):
    """A ctypes value holding one launch argument (kernel parameters are passed by address)."""
    if isinstance(argument, (int, np.integer)) and not isinstance(argument, np.generic):
        return ctypes.c_uint64(argument)
    if isinstance(argument, np.generic):
        kinds = {
            np.dtype(np.int32): ctypes.c_int32,
            np.dtype(np.int64): ctypes.c_int64,
            np.dtype(np.uint32): ctypes.c_uint32,
            np.dtype(np.uint64): ctypes.c_uint64,
            np.dtype(np.float32): ctypes.c_float,
            np.dtype(np.float64): ctypes.c_double,
        }
        ctype = kinds.get(argument.dtype)
        if ctype is not None:
            return ctype(argument.item())
    from hlort.errors import InvalidArgument

    raise InvalidArgument(
        f"kernel argument {argument!r} is neither a device pointer (int) nor a "
        f"32/64-bit NumPy scalar"
    )
