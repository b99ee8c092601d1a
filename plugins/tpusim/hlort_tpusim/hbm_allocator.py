"""The HBM of one chip: an address-space allocator with real placement and fragmentation.

Allocations get an aligned offset in ``[0, capacity)`` by best fit over a sorted free list;
frees coalesce neighbours. When no single free block is large enough the request fails with
RESOURCE_EXHAUSTED naming the requested bytes, the free bytes and the largest free block, so
fragmentation is visible. Nothing already allocated is touched by a failure.

The bytes themselves live in one NumPy array per allocation (HBM is not backed by a host array
of its full size); only the simulator, the DMA model and the device's transfer hooks touch them:
the host never gets a view of device memory.

One plain lock guards the free list: no finalizer ever calls in (a dropped buffer's block is freed
by the device at its next storage call, ``SimpleDevice.defer_free``), so the garbage collector
running inside an allocate or free cannot re-enter it.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from dataclasses import dataclass, field

import numpy as np

from hlort.errors import InvalidArgument, ResourceExhausted
from hlort.shape import ArrayShape

_ids = itertools.count()


@dataclass(eq=False)
class HbmAllocation:
    """One block of HBM: where it is, how big, and (for the simulator) its contents."""

    chip: int
    offset: int
    nbytes: int
    shape: ArrayShape
    data: np.ndarray = field(repr=False)
    label: str = ""
    uid: int = field(default_factory=lambda: next(_ids))
    freed: bool = False

    def view_as(self, shape: ArrayShape) -> np.ndarray:
        """The contents reinterpreted as ``shape`` (same bytes, row major): a bitcast."""
        flat = self.data.reshape(-1).view(np.uint8)[: shape.nbytes]
        return flat.view(shape.dtype.numpy).reshape(shape.dims)


class HbmAllocator:
    """Best-fit allocator over ``capacity`` bytes with ``alignment``-byte granules."""

    def __init__(self, capacity: int, alignment: int = 512, chip: int = 0, name: str = "hbm"):
        if capacity <= 0 or alignment <= 0:
            raise InvalidArgument("HBM capacity and alignment must be positive")
        self.capacity = capacity
        self.alignment = alignment
        self.chip = chip
        self.name = name
        self._lock = threading.Lock()
        self._free: list[tuple[int, int]] = [(0, capacity)]  # (offset, size), sorted by offset
        self._live: dict[int, HbmAllocation] = {}
        self.peak_bytes = 0
        self.num_allocs = 0
        self.largest_alloc = 0

    # -- queries ------------------------------------------------------------------------------
    @property
    def bytes_in_use(self) -> int:
        return self.capacity - self.bytes_free

    @property
    def bytes_free(self) -> int:
        return sum(size for _, size in self._free)

    @property
    def largest_free_block(self) -> int:
        return max((size for _, size in self._free), default=0)

    @property
    def fragments(self) -> int:
        return len(self._free)

    def live_allocations(self) -> list[HbmAllocation]:
        with self._lock:
            return sorted(self._live.values(), key=lambda a: a.offset)

    def rounded(self, nbytes: int) -> int:
        granule = self.alignment
        return max(granule, -(-nbytes // granule) * granule)

    # -- allocation ---------------------------------------------------------------------------
    def allocate(self, shape: ArrayShape, label: str = "") -> HbmAllocation:
        """Place an array of ``shape``; RESOURCE_EXHAUSTED when no free block can hold it."""
        need = self.rounded(shape.nbytes)
        with self._lock:
            best = None
            for index, (_, size) in enumerate(self._free):
                if size >= need and (best is None or size < self._free[best][1]):
                    best = index
            if best is None:
                free = self.bytes_free
                raise ResourceExhausted(
                    f"{self.name}: cannot allocate {need} bytes for {shape}"
                    f"{' (' + label + ')' if label else ''}: {free} of {self.capacity} bytes "
                    f"free in {len(self._free)} block(s), the largest {self.largest_free_block}"
                    f"; delete buffers you no longer need or use a smaller program"
                )
            offset, size = self._free[best]
            if size == need:
                del self._free[best]
            else:
                self._free[best] = (offset + need, size - need)
            data = np.zeros(shape.dims, dtype=shape.dtype.numpy)
            alloc = HbmAllocation(self.chip, offset, need, shape, data, label)
            self._live[alloc.uid] = alloc
            self.num_allocs += 1
            self.largest_alloc = max(self.largest_alloc, need)
            self.peak_bytes = max(self.peak_bytes, self.capacity - self.bytes_free)
            return alloc

    def free(self, alloc: HbmAllocation) -> None:
        """Return a block; freeing twice is an INVALID_ARGUMENT (a plugin bug, not a user's)."""
        with self._lock:
            if alloc.freed or self._live.pop(alloc.uid, None) is None:
                raise InvalidArgument(f"{self.name}: double free of block at {alloc.offset}")
            alloc.freed = True
            alloc.data = np.zeros(0, np.uint8)
            keys = [o for o, _ in self._free]
            index = bisect.bisect_left(keys, alloc.offset)
            self._free.insert(index, (alloc.offset, alloc.nbytes))
            self._coalesce(index)

    def _coalesce(self, index: int) -> None:
        if index + 1 < len(self._free):
            off, size = self._free[index]
            nxt_off, nxt_size = self._free[index + 1]
            if off + size == nxt_off:
                self._free[index] = (off, size + nxt_size)
                del self._free[index + 1]
        if index > 0:
            prev_off, prev_size = self._free[index - 1]
            off, size = self._free[index]
            if prev_off + prev_size == off:
                self._free[index - 1] = (prev_off, prev_size + size)
                del self._free[index]
