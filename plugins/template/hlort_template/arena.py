"""Arena: the device memory of a template device, and its allocator.

A real backend gets device memory from its driver (``cudaMalloc``, a DMA heap...) and keeps
opaque handles. The template does the same with an anonymous memory map: a :class:`Block` is
an (offset, size) handle into it, allocated first-fit and coalesced on free. Buffers never
alias the caller's NumPy arrays: data is copied in and out, as over a PCIe bus.

A plain ``Lock`` is enough, and the right choice: no finalizer ever calls ``free`` (the base
:class:`~hlort.plugin.base.SimpleDevice` queues a garbage-collected buffer's block and frees it
at the device's next storage call), so the garbage collector running inside ``allocate`` cannot
re-enter the arena. A driver allocator of your own needs nothing more.
"""

from __future__ import annotations

import bisect
import mmap
import threading
from dataclasses import dataclass

import numpy as np

from hlort.errors import ResourceExhausted

ALIGNMENT = 64


@dataclass(frozen=True)
class Block:
    """One allocation: ``nbytes`` requested, ``size`` reserved (aligned) at ``offset``."""

    offset: int
    nbytes: int
    size: int


class Arena:
    """``size`` bytes of memory and a first-fit free list; thread-safe."""

    def __init__(self, size: int, name: str = "arena"):
        self.size = size
        self.name = name
        self._memory = mmap.mmap(-1, max(size, 1))  # zeroed; pages are committed on first touch
        self._free: list[tuple[int, int]] = [(0, size)]  # (offset, length), sorted by offset
        self._lock = threading.Lock()

    def allocate(self, nbytes: int) -> Block:
        size = max(ALIGNMENT, -(-nbytes // ALIGNMENT) * ALIGNMENT)
        with self._lock:
            for i, (offset, length) in enumerate(self._free):
                if length >= size:
                    if length == size:
                        del self._free[i]
                    else:
                        self._free[i] = (offset + size, length - size)
                    return Block(offset, nbytes, size)
            largest = max((length for _, length in self._free), default=0)
        raise ResourceExhausted(
            f"{self.name}: cannot allocate {nbytes} bytes (largest free block {largest} of "
            f"{self.size}); delete buffers you no longer need"
        )

    def free(self, block: Block) -> None:
        with self._lock:
            i = bisect.bisect(self._free, (block.offset, 0))
            self._free.insert(i, (block.offset, block.size))
            # merge with the following, then the preceding, neighbour
            if i + 1 < len(self._free) and block.offset + block.size == self._free[i + 1][0]:
                self._free[i] = (block.offset, block.size + self._free.pop(i + 1)[1])
            if i > 0 and self._free[i - 1][0] + self._free[i - 1][1] == self._free[i][0]:
                self._free[i - 1] = (self._free[i - 1][0], self._free[i - 1][1] + self._free[i][1])
                del self._free[i]

    def bytes_free(self) -> int:
        with self._lock:
            return sum(length for _, length in self._free)

    def view(self, block: Block) -> np.ndarray:
        """The block's bytes as a writable uint8 array (valid until the block is freed)."""
        return np.frombuffer(self._memory, dtype=np.uint8, count=block.nbytes, offset=block.offset)

    def write(self, block: Block, array: np.ndarray) -> None:
        """Host -> device: copy a C-contiguous array's bytes into the block."""
        if block.nbytes:
            self.view(block)[:] = np.ascontiguousarray(array).reshape(-1).view(np.uint8)

    def read(self, block: Block, dtype: np.dtype, dims: tuple[int, ...]) -> np.ndarray:
        """Device -> host: a new array holding the block's contents."""
        if not block.nbytes:
            return np.empty(dims, dtype)
        return self.view(block).view(dtype).reshape(dims).copy()
