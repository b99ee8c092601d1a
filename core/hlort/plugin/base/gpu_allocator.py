"""A caching device allocator: freed blocks are kept for reuse instead of returned to the driver.

Driver allocation (``cuMemAlloc``) is slow and frees synchronize the device, so, as XLA's BFC and
PyTorch's caching allocators do, a freed block goes to a cache keyed by its rounded size and the
next request of that size class takes it back without a driver call. All work on a device goes
through its one stream, so a block freed after its last use was *enqueued* may be handed out
again at once: the next user's work runs after that use in stream order. The cache is given back
to the driver (after a device synchronize) when an allocation fails, then the allocation is
tried once more; a second failure is RESOURCE_EXHAUSTED naming the bytes asked, the bytes free
and the fix.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable
from dataclasses import dataclass

from hlort.errors import ResourceExhausted
from hlort.plugin.base.gpu_driver import GpuDriver, GpuOutOfMemory

SMALL_ROUNDING = 512
LARGE_THRESHOLD = 1 << 20
LARGE_ROUNDING = 2 << 20


def rounded_size(nbytes: int) -> int:
    """The size class of a request: 512-byte steps below 1 MiB, 2 MiB steps above."""
    step = SMALL_ROUNDING if nbytes < LARGE_THRESHOLD else LARGE_ROUNDING
    return max(step, -(-nbytes // step) * step)


@dataclass(frozen=True, eq=False)
class DeviceBlock:
    """One allocation on one device: ``pointer`` to ``size`` bytes, ``nbytes`` of them asked.

    A zero-byte request gets a block with pointer 0 and size 0 (no driver call)."""

    pointer: int
    nbytes: int
    size: int
    ordinal: int

    def __repr__(self) -> str:
        return f"<DeviceBlock 0x{self.pointer:x} {self.nbytes}B on device {self.ordinal}>"


@dataclass(frozen=True)
class AllocatorStats:
    bytes_in_use: int
    peak_bytes_in_use: int
    bytes_reserved: int
    bytes_cached: int
    num_allocs: int
    num_driver_allocs: int
    largest_alloc_size: int


class CachingAllocator:
    """Per-device allocator over a :class:`GpuDriver`; thread-safe.

    ``synchronize`` is called before cached blocks go back to the driver, so no queued work still
    uses them. ``where`` names the device in messages (``"cuda:0"``).
    """

    def __init__(
        self,
        driver: GpuDriver,
        ordinal: int,
        where: str,
        synchronize: Callable[[], None] = lambda: None,
    ):
        self.driver = driver
        self.ordinal = ordinal
        self.where = where
        self._synchronize = synchronize
        self._lock = threading.Lock()
        self._cached: dict[int, list[DeviceBlock]] = {}
        self._cached_sizes: list[int] = []  # sorted sizes with a non-empty list in _cached
        self._in_use = 0
        self._peak = 0
        self._cached_bytes = 0
        self._num_allocs = 0
        self._num_driver_allocs = 0
        self._largest = 0

    def allocate(self, nbytes: int) -> DeviceBlock:
        if nbytes < 0:
            raise ValueError(f"negative allocation size {nbytes}")
        if nbytes == 0:
            return DeviceBlock(0, 0, 0, self.ordinal)
        size = rounded_size(nbytes)
        with self._lock:
            block = self._take_cached(size)
            if block is not None:
                block = DeviceBlock(block.pointer, nbytes, block.size, self.ordinal)
                self._count(block)
                return block
        pointer = self._driver_alloc(nbytes, size)
        block = DeviceBlock(pointer, nbytes, size, self.ordinal)
        with self._lock:
            self._num_driver_allocs += 1
            self._count(block)
        return block

    def free(self, block: DeviceBlock) -> None:
        """Return ``block`` to the cache (its last use must already be enqueued on the stream)."""
        if block.size == 0:
            return
        with self._lock:
            self._in_use -= block.size
            blocks = self._cached.setdefault(block.size, [])
            if not blocks:
                bisect.insort(self._cached_sizes, block.size)
            blocks.append(block)
            self._cached_bytes += block.size

    def release_cache(self) -> int:
        """Give every cached block back to the driver; returns the bytes released."""
        with self._lock:
            blocks = [b for bs in self._cached.values() for b in bs]
            self._cached.clear()
            self._cached_sizes.clear()
            self._cached_bytes = 0
        if blocks:
            self._synchronize()
        for block in blocks:
            self.driver.mem_free(self.ordinal, block.pointer)
        return sum(b.size for b in blocks)

    def stats(self) -> AllocatorStats:
        with self._lock:
            return AllocatorStats(
                bytes_in_use=self._in_use,
                peak_bytes_in_use=self._peak,
                bytes_reserved=self._in_use + self._cached_bytes,
                bytes_cached=self._cached_bytes,
                num_allocs=self._num_allocs,
                num_driver_allocs=self._num_driver_allocs,
                largest_alloc_size=self._largest,
            )

    # -- internals -----------------------------------------------------------------------------
    def _take_cached(self, size: int) -> DeviceBlock | None:
        """A cached block of this size class, or (large requests) the smallest one at most 1/8
        bigger; called with the lock held."""
        i = bisect.bisect_left(self._cached_sizes, size)
        if i == len(self._cached_sizes):
            return None
        found = self._cached_sizes[i]
        if found != size and (size < LARGE_THRESHOLD or found > size + size // 8):
            return None
        blocks = self._cached[found]
        block = blocks.pop()
        if not blocks:
            del self._cached[found]
            del self._cached_sizes[i]
        self._cached_bytes -= block.size
        return block

    def _count(self, block: DeviceBlock) -> None:
        self._in_use += block.size
        self._num_allocs += 1
        self._peak = max(self._peak, self._in_use)
        self._largest = max(self._largest, block.nbytes)

    def _driver_alloc(self, nbytes: int, size: int) -> int:
        try:
            return self.driver.mem_alloc(self.ordinal, size)
        except GpuOutOfMemory:
            released = self.release_cache()
        try:
            return self.driver.mem_alloc(self.ordinal, size)
        except GpuOutOfMemory:
            pass
        try:
            free, total = self.driver.mem_info(self.ordinal)
            room = f"{free:,} of {total:,} bytes are free"
        except Exception:  # noqa: BLE001 - the message must not fail for want of a number
            room = "the driver could not say how much is free"
        with self._lock:
            in_use = self._in_use
        raise ResourceExhausted(
            f"{self.where}: out of device memory allocating {nbytes:,} bytes ({size:,} rounded); "
            f"{room}; hlort holds {in_use:,} bytes in live buffers and released {released:,} "
            f"cached bytes before retrying; fix: delete buffers you no longer need "
            f"(buffer.delete()), donate arguments you do not reuse, or use smaller shapes"
        )
