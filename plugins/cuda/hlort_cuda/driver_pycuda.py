"""The CUDA driver on pycuda: the optional second driver (``HLORT_CUDA_DRIVER=pycuda``).

pycuda builds against ``libcuda`` and the CUDA headers, so it installs only where a CUDA toolkit
is (extra ``hlort-cuda[pycuda]``); it is not installed in CI nor on the project's GPU machine,
and this module has therefore never run there: docs/cuda-plugin.md says so. It implements the
same protocol as driver_bindings.py; pycuda's contexts are a per-thread stack, so each call
pushes the device's primary context and pops it after.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlort.errors import HlortError, Internal, InvalidArgument, NotFound
from hlort.plugin.base.gpu_driver import GpuDeviceProperties, GpuDriver, GpuOutOfMemory
from hlort_cuda.targets import arch_of_capability, peak_bandwidth


@dataclass(frozen=True, eq=False)
class _Handle:
    ordinal: int
    handle: Any


class PyCudaDriver(GpuDriver):
    name = "pycuda"

    def __init__(self):
        import pycuda.driver as drv  # heavy, and needs libcuda: only when a client starts

        self.drv = drv
        with self._errors("cuInit"):
            drv.init()
            self._devices = [drv.Device(k) for k in range(drv.Device.count())]
        self._contexts: dict[int, Any] = {}
        self._allocations: dict[int, Any] = {}  # pointer -> DeviceAllocation (frees on drop)
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextlib.contextmanager
    def _errors(self, call: str):
        drv = self.drv
        try:
            yield
        except HlortError:
            raise
        except drv.MemoryError as err:
            raise GpuOutOfMemory(
                f"{call} failed: {err}; fix: delete buffers you no longer "
                f"need, or use smaller shapes"
            ) from None
        except drv.LaunchError as err:
            raise Internal(
                f"{call} failed: {err}; the CUDA context is unusable: restart the process"
            ) from None
        except drv.Error as err:
            if "not found" in str(err).lower():
                raise NotFound(f"{call} failed: {err}") from None
            if call == "cuModuleLoadData":
                raise InvalidArgument(
                    f"{call} failed: {err}; fix: update the NVIDIA driver or "
                    f"compile for an older target"
                ) from None
            raise Internal(f"{call} failed: {err}") from None

    @contextlib.contextmanager
    def _on(self, ordinal: int, call: str):
        with self._lock:
            ctx = self._contexts.get(ordinal)
            if ctx is None:
                ctx = self._devices[ordinal].retain_primary_context()
                self._contexts[ordinal] = ctx
        with self._errors(call):
            ctx.push()
            try:
                yield
            finally:
                self.drv.Context.pop()

    # -- devices -------------------------------------------------------------------------------
    def version(self) -> str:
        v = self.drv.get_driver_version()
        return f"CUDA driver {v // 1000}.{v % 1000 // 10} (pycuda)"

    def device_count(self) -> int:
        return len(self._devices)

    def properties(self, ordinal: int) -> GpuDeviceProperties:
        dev, attr = self._devices[ordinal], self.drv.device_attribute
        major, minor = dev.compute_capability()
        return GpuDeviceProperties(
            ordinal=ordinal,
            name=dev.name(),
            arch=arch_of_capability(major, minor),
            total_memory=int(dev.total_memory()),
            compute_capability=(major, minor),
            multiprocessor_count=dev.get_attribute(attr.MULTIPROCESSOR_COUNT),
            warp_size=dev.get_attribute(attr.WARP_SIZE),
            max_threads_per_block=dev.get_attribute(attr.MAX_THREADS_PER_BLOCK),
            max_shared_memory_per_block=dev.get_attribute(attr.MAX_SHARED_MEMORY_PER_BLOCK),
            peak_bandwidth_bytes_s=peak_bandwidth(
                dev.get_attribute(attr.MEMORY_CLOCK_RATE),
                dev.get_attribute(attr.GLOBAL_MEMORY_BUS_WIDTH),
            ),
            pci_bus_id=dev.pci_bus_id(),
        )

    def can_access_peer(self, ordinal: int, peer: int) -> bool:
        return bool(self._devices[ordinal].can_access_peer(self._devices[peer]))

    # -- memory --------------------------------------------------------------------------------
    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        with self._on(ordinal, "cuMemAlloc"):
            allocation = self.drv.mem_alloc(nbytes)
        self._allocations[int(allocation)] = allocation
        return int(allocation)

    def mem_free(self, ordinal: int, pointer: int) -> None:
        with self._on(ordinal, "cuMemFree"):
            self._allocations.pop(pointer).free()

    def mem_info(self, ordinal: int) -> tuple[int, int]:
        with self._on(ordinal, "cuMemGetInfo"):
            free, total = self.drv.mem_get_info()
        return int(free), int(total)

    # -- streams and events --------------------------------------------------------------------
    def stream_create(self, ordinal: int) -> _Handle:
        with self._on(ordinal, "cuStreamCreate"):
            return _Handle(ordinal, self.drv.Stream())

    def stream_destroy(self, stream: _Handle) -> None:
        self.stream_synchronize(stream)  # pycuda destroys the stream when it is collected

    def stream_synchronize(self, stream: _Handle) -> None:
        with self._on(stream.ordinal, "cuStreamSynchronize"):
            stream.handle.synchronize()

    def stream_wait_event(self, stream: _Handle, event: _Handle) -> None:
        with self._on(stream.ordinal, "cuStreamWaitEvent"):
            stream.handle.wait_for_event(event.handle)

    def event_create(self, ordinal: int, timing: bool = False) -> _Handle:
        flags = 0 if timing else self.drv.event_flags.DISABLE_TIMING
        with self._on(ordinal, "cuEventCreate"):
            return _Handle(ordinal, self.drv.Event(flags))

    def event_destroy(self, event: _Handle) -> None:
        pass  # pycuda destroys the event when it is collected

    def event_record(self, event: _Handle, stream: _Handle) -> None:
        with self._on(stream.ordinal, "cuEventRecord"):
            event.handle.record(stream.handle)

    def event_query(self, event: _Handle) -> bool:
        with self._on(event.ordinal, "cuEventQuery"):
            return bool(event.handle.query())

    def event_synchronize(self, event: _Handle) -> None:
        with self._on(event.ordinal, "cuEventSynchronize"):
            event.handle.synchronize()

    def event_elapsed_ms(self, start: _Handle, end: _Handle) -> float:
        with self._on(start.ordinal, "cuEventElapsedTime"):
            return float(start.handle.time_till(end.handle))

    # -- copies --------------------------------------------------------------------------------
    def copy_h2d_async(self, pointer: int, host: np.ndarray, stream: _Handle) -> None:
        with self._on(stream.ordinal, "cuMemcpyHtoDAsync"):
            self.drv.memcpy_htod_async(pointer, host, stream.handle)

    def copy_d2h_async(self, host: np.ndarray, pointer: int, stream: _Handle) -> None:
        with self._on(stream.ordinal, "cuMemcpyDtoHAsync"):
            self.drv.memcpy_dtoh_async(host, pointer, stream.handle)

    def copy_d2d_async(self, dst: int, src: int, nbytes: int, stream: _Handle) -> None:
        with self._on(stream.ordinal, "cuMemcpyDtoDAsync"):
            self.drv.memcpy_dtod_async(dst, src, nbytes, stream.handle)

    def copy_peer_async(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream) -> None:
        with self._on(stream.ordinal, "cuMemcpyPeerAsync"):
            self.drv.memcpy_peer_async(
                dst,
                src,
                nbytes,
                self._contexts.get(dst_ordinal),
                self._contexts.get(src_ordinal),
                stream.handle,
            )

    def memset_async(self, pointer: int, byte: int, nbytes: int, stream: _Handle) -> None:
        with self._on(stream.ordinal, "cuMemsetD8Async"):
            self.drv.memset_d8_async(pointer, byte, nbytes, stream.handle)

    # -- code ----------------------------------------------------------------------------------
    def module_load(self, ordinal: int, image: bytes) -> _Handle:
        data = bytes(image) if bytes(image).endswith(b"\0") else bytes(image) + b"\0"
        with self._on(ordinal, "cuModuleLoadData"):
            return _Handle(ordinal, self.drv.module_from_buffer(data))

    def module_unload(self, module: _Handle) -> None:
        pass  # pycuda unloads the module when it is collected

    def function(self, module: _Handle, name: str) -> _Handle:
        with self._on(module.ordinal, "cuModuleGetFunction"):
            return _Handle(module.ordinal, module.handle.get_function(name))

    def launch(
        self,
        function: _Handle,
        grid,
        block,
        shared_bytes: int,
        stream: _Handle,
        arguments: Sequence,
    ) -> None:
        codes = "".join("P" if isinstance(a, int) else np.asarray(a).dtype.char for a in arguments)
        with self._on(stream.ordinal, "cuLaunchKernel"):
            fn = function.handle
            fn.prepare(codes)
            fn.prepared_async_call(
                tuple(grid), tuple(block), stream.handle, *arguments, shared_size=shared_bytes
            )

    def make_current(self, ordinal: int) -> None:
        """Leave the device's context pushed on this thread (once per thread and device)."""
        pushed = getattr(self._local, "pushed", None)
        if pushed is None:
            pushed = self._local.pushed = set()
        if ordinal in pushed:
            return
        with self._on(ordinal, "cuCtxPushCurrent"):
            pass  # creates the primary context
        with self._errors("cuCtxPushCurrent"):
            self._contexts[ordinal].push()
        pushed.add(ordinal)

    def native_stream(self, stream: _Handle) -> int:
        return int(stream.handle.handle)

    def close(self) -> None:
        with self._lock:
            contexts, self._contexts = self._contexts, {}
        for ctx in contexts.values():
            with contextlib.suppress(Exception):
                ctx.detach()
