"""An in-process GpuDriver on host memory, for testing the shared GPU runtime without a GPU.

It is a model of a driver, not of a GPU: device memory is host bytes, and stream work is
*deferred*: copies and launches are queued per stream and run only when an event or the stream
is synchronized, so a runtime that reads a result before waiting for its event gets stale bytes
and the tests notice. Every call is recorded (``calls``). Kernels are Python functions a test
registers by name (``kernels``), called with the driver and the pointer arguments; a module
image is opaque bytes the fake keeps. Nothing here says anything about real GPU execution.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hlort.errors import InvalidArgument, NotFound
from hlort.plugin.base.gpu_driver import GpuDeviceProperties, GpuDriver, GpuOutOfMemory

ALIGN = 256


@dataclass
class FakeStream:
    ordinal: int
    ops: list[Callable[[], None]] = field(default_factory=list)


@dataclass
class FakeEvent:
    ordinal: int
    stream: FakeStream | None = None
    fired: bool = False
    error: BaseException | None = None


@dataclass
class FakeModule:
    ordinal: int
    image: bytes


class FakeGpuDriver(GpuDriver):
    name = "fake"

    def __init__(self, devices: int = 1, memory: int = 64 << 20, arch: str = "sm_90"):
        self._props = [
            GpuDeviceProperties(
                ordinal=k,
                name="Fake GPU",
                arch=arch,
                total_memory=memory,
                compute_capability=(int(arch[3]), int(arch[4:]))
                if arch.startswith("sm_")
                else None,
                multiprocessor_count=4,
            )
            for k in range(devices)
        ]
        self._lock = threading.RLock()
        self._blocks: list[tuple[int, bytearray]] = []  # sorted by base pointer
        self._used = [0] * devices
        self._next = 1 << 20
        self.calls: list[tuple] = []
        self.kernels: dict[str, Callable[..., None]] = {}
        self.fail_next_kernel: BaseException | None = None
        self.any_kernel: Callable[..., None] | None = None  # for names not in ``kernels``
        self.closed = False
        self._streams: list[FakeStream] = []

    # -- helpers for tests ---------------------------------------------------------------------
    def read(self, pointer: int, nbytes: int) -> bytes:
        with self._lock:
            base, buf = self._find(pointer)
            return bytes(buf[pointer - base : pointer - base + nbytes])

    def array(self, pointer: int, dtype, dims) -> np.ndarray:
        """A writable view of device bytes as an array (for fake kernels)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(dims, dtype=np.int64))
        with self._lock:
            base, buf = self._find(pointer)
        view = np.frombuffer(buf, np.uint8)[
            pointer - base : pointer - base + count * dtype.itemsize
        ]
        return view.view(dtype).reshape(dims)

    def live_allocations(self) -> int:
        with self._lock:
            return len(self._blocks)

    def pending_ops(self) -> int:
        return sum(len(s.ops) for s in self._streams)

    def _find(self, pointer: int) -> tuple[int, bytearray]:
        i = bisect.bisect_right(self._blocks, pointer, key=lambda b: b[0]) - 1
        if i < 0 or not self._blocks[i][0] <= pointer <= self._blocks[i][0] + len(
            self._blocks[i][1]
        ):
            raise InvalidArgument(f"fake driver: 0x{pointer:x} is not device memory")
        return self._blocks[i]

    def _record(self, *call) -> None:
        with self._lock:
            self.calls.append(call)

    # -- devices -------------------------------------------------------------------------------
    def version(self) -> str:
        return "fake 1.0"

    def device_count(self) -> int:
        return len(self._props)

    def properties(self, ordinal: int) -> GpuDeviceProperties:
        return self._props[ordinal]

    def can_access_peer(self, ordinal: int, peer: int) -> bool:
        return True

    # -- memory --------------------------------------------------------------------------------
    def mem_alloc(self, ordinal: int, nbytes: int) -> int:
        with self._lock:
            if self._used[ordinal] + nbytes > self._props[ordinal].total_memory:
                raise GpuOutOfMemory(f"fake driver: out of memory ({nbytes} bytes)")
            pointer = self._next
            self._next += -(-nbytes // ALIGN) * ALIGN + ALIGN
            bisect.insort(self._blocks, (pointer, bytearray(nbytes)), key=lambda b: b[0])
            self._used[ordinal] += nbytes
            self._record("mem_alloc", ordinal, nbytes)
            return pointer

    def mem_free(self, ordinal: int, pointer: int) -> None:
        with self._lock:
            i = bisect.bisect_left(self._blocks, pointer, key=lambda b: b[0])
            if i == len(self._blocks) or self._blocks[i][0] != pointer:
                raise InvalidArgument(f"fake driver: free of 0x{pointer:x}, not allocated")
            self._used[ordinal] -= len(self._blocks[i][1])
            del self._blocks[i]
            self._record("mem_free", ordinal, pointer)

    def mem_info(self, ordinal: int) -> tuple[int, int]:
        total = self._props[ordinal].total_memory
        return total - self._used[ordinal], total

    # -- streams and events --------------------------------------------------------------------
    def stream_create(self, ordinal: int) -> FakeStream:
        stream = FakeStream(ordinal)
        with self._lock:
            self._streams.append(stream)
        return stream

    def stream_destroy(self, stream: FakeStream) -> None:
        self.stream_synchronize(stream)

    def _drain(self, stream: FakeStream, until: FakeEvent | None = None) -> None:
        with self._lock:
            while stream.ops and not (until is not None and until.fired):
                stream.ops.pop(0)()

    def stream_synchronize(self, stream: FakeStream) -> None:
        self._drain(stream)

    def stream_wait_event(self, stream: FakeStream, event: FakeEvent) -> None:
        self._enqueue(stream, lambda: self.event_synchronize(event))

    def event_create(self, ordinal: int, timing: bool = False) -> FakeEvent:
        return FakeEvent(ordinal)

    def event_destroy(self, event: FakeEvent) -> None:
        pass

    def event_record(self, event: FakeEvent, stream: FakeStream) -> None:
        event.stream, event.fired = stream, False

        def fire() -> None:
            event.fired = True

        self._enqueue(stream, fire)

    def event_elapsed_ms(self, start: FakeEvent, end: FakeEvent) -> float:
        return 1.0  # a fake has no clock worth reading

    def event_query(self, event: FakeEvent) -> bool:
        return event.fired

    def event_synchronize(self, event: FakeEvent) -> None:
        if event.stream is not None:
            self._drain(event.stream, until=event)
        if event.error is not None:
            raise event.error

    def _enqueue(self, stream: FakeStream, op: Callable[[], None]) -> None:
        with self._lock:
            stream.ops.append(op)

    # -- copies --------------------------------------------------------------------------------
    def copy_h2d_async(self, pointer: int, host: np.ndarray, stream: FakeStream) -> None:
        self._record("h2d", pointer, host.nbytes)

        def op(host=host) -> None:
            base, buf = self._find(pointer)
            buf[pointer - base : pointer - base + host.nbytes] = host.tobytes()

        self._enqueue(stream, op)

    def copy_d2h_async(self, host: np.ndarray, pointer: int, stream: FakeStream) -> None:
        self._record("d2h", pointer, host.nbytes)

        def op() -> None:
            host.reshape(-1).view(np.uint8)[:] = np.frombuffer(
                self.read(pointer, host.nbytes), np.uint8
            )

        self._enqueue(stream, op)

    def copy_d2d_async(self, dst: int, src: int, nbytes: int, stream: FakeStream) -> None:
        self._record("d2d", dst, src, nbytes)
        self._enqueue(stream, lambda: self._move(dst, src, nbytes))

    def copy_peer_async(self, dst, dst_ordinal, src, src_ordinal, nbytes, stream) -> None:
        self._record("peer", dst_ordinal, src_ordinal, nbytes)
        self._enqueue(stream, lambda: self._move(dst, src, nbytes))

    def memset_async(self, pointer: int, byte: int, nbytes: int, stream: FakeStream) -> None:
        def op() -> None:
            base, buf = self._find(pointer)
            buf[pointer - base : pointer - base + nbytes] = bytes([byte]) * nbytes

        self._enqueue(stream, op)

    def _move(self, dst: int, src: int, nbytes: int) -> None:
        data = self.read(src, nbytes)
        base, buf = self._find(dst)
        buf[dst - base : dst - base + nbytes] = data

    # -- code ----------------------------------------------------------------------------------
    def module_load(self, ordinal: int, image: bytes) -> FakeModule:
        self._record("module_load", ordinal, len(image))
        return FakeModule(ordinal, bytes(image))

    def module_unload(self, module: FakeModule) -> None:
        self._record("module_unload", module.ordinal)

    def function(self, module: FakeModule, name: str):
        if name not in self.kernels and self.any_kernel is not None:
            self.kernels[name] = self.any_kernel
        if name not in self.kernels:
            raise NotFound(f"fake driver: no kernel {name!r}")
        return (module, name)

    def launch(
        self, function, grid, block, shared_bytes, stream: FakeStream, arguments: Sequence[int]
    ) -> None:
        module, name = function
        self._record("launch", name, tuple(grid), tuple(block), shared_bytes, tuple(arguments))
        kernel = self.kernels[name]
        failure, self.fail_next_kernel = self.fail_next_kernel, None

        def op() -> None:
            if failure is not None:
                raise failure  # a faulting kernel: whoever synchronizes the stream learns it
            kernel(self, module, list(arguments))

        self._enqueue(stream, op)

    def close(self) -> None:
        self.closed = True
