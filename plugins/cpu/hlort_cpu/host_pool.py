"""HostPool: a caching allocator for large arrays, so repeated calls never page-fault.

``np.empty`` of a large array maps fresh pages (glibc serves big blocks with mmap), and the first
write to every 4 KiB page faults: a 64 MiB output costs ~16k page faults per call, as much as
the kernel itself. The pool hands out 64-byte aligned arrays (whole cache lines, as streaming
stores need) whose memory comes back to the pool when the last array viewing it dies (CPython's
reference counting runs ``_Block.__del__`` at once), so a program called in a loop reuses the
same warm pages. Small arrays go straight to ``np.empty``: malloc reuses them cheaply already.

The pool keeps at most ``HLORT_CPU_POOL_BYTES`` (default 1 GiB) of idle memory; beyond that a
returned block is simply freed. Thread-safe: list append/pop are atomic under the GIL, and the
pool takes no lock at all, which ``_Block.__del__`` needs: the garbage collector may run it
inside any call of any thread, this pool's ``empty`` included (a lock there would deadlock the
thread on itself; at worst a block given back meanwhile is counted over the cap once).
"""

from __future__ import annotations

import math
import os

import numpy as np

from hlort.errors import ResourceExhausted

POOL_MIN_BYTES = 1 << 18  # below this, np.empty is as fast and faults little
ALIGN = 64


class _Block:
    """Owns one raw allocation; exposes an aligned window of it as an array interface."""

    __slots__ = ("raw", "pool", "nbytes", "__array_interface__")

    def __init__(
        self, raw: tuple[np.ndarray, int], pool: HostPool, nbytes: int, shape, typestr: str
    ):
        self.raw, self.pool, self.nbytes = raw, pool, nbytes
        self.__array_interface__ = {
            "data": (raw[1], False),
            "shape": shape,
            "typestr": typestr,
            "version": 3,
        }

    def __del__(self) -> None:
        self.pool._give_back(self.nbytes, self.raw)


class HostPool:
    def __init__(self, limit_bytes: int | None = None):
        if limit_bytes is None:
            limit_bytes = int(os.environ.get("HLORT_CPU_POOL_BYTES", 1 << 30))
        self.limit = limit_bytes
        self.idle_bytes = 0
        self._free: dict[int, list[tuple[np.ndarray, int]]] = {}  # (memory, aligned address)
        self.hits = 0
        self.misses = 0

    def empty(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """An uninitialized array; 64-byte aligned and pooled when large."""
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes < POOL_MIN_BYTES:
            return np.empty(shape, dtype)
        free = self._free.get(nbytes)
        raw = None
        if free:
            try:
                raw = free.pop()
                self.idle_bytes -= nbytes
                self.hits += 1
            except IndexError:  # another thread took the last one
                raw = None
        if raw is None:
            try:
                memory = np.empty(nbytes + ALIGN, np.uint8)
            except MemoryError:
                raise ResourceExhausted(
                    f"the cpu host pool could not allocate {nbytes:,} "
                    "bytes; free buffers or shrink the program"
                ) from None
            address = memory.ctypes.data
            raw = (memory, address + -address % ALIGN)
            self.misses += 1
        # bytes viewed as ``dtype``: the typestr of bf16/float8 ('<V2', '<f1') does not name them
        block = np.asarray(_Block(raw, self, nbytes, (nbytes,), "|u1"))
        return block.view(dtype).reshape(tuple(shape))

    def _give_back(self, nbytes: int, raw: tuple[np.ndarray, int]) -> None:
        if self.idle_bytes + nbytes > self.limit:
            return
        self._free.setdefault(nbytes, []).append(raw)
        self.idle_bytes += nbytes

    def clear(self) -> None:
        """Free every idle block (memory pressure, tests)."""
        self._free.clear()
        self.idle_bytes = 0


_POOL: HostPool | None = None


def host_pool() -> HostPool:
    """The process-wide pool of the cpu plugin."""
    global _POOL
    if _POOL is None:
        _POOL = HostPool()
    return _POOL
