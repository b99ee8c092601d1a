"""Which storages an output may share memory with: found by memory owner, in one dict lookup.

An execution must copy an output that shares memory with a kept input (or a constant, or an
earlier output), since the caller owns every output. Asking ``np.may_share_memory`` of every
(output, input) pair costs a few hundred calls per step of a training loop (20 outputs x 21
inputs), more than the rest of the dispatch. Memory that a program hands back as an output
is either fresh or derived from an input or a constant through NumPy views, and a view's
``base`` chain leads to the object owning the memory: so only storages with the same owner
can overlap, and ``np.may_share_memory`` (bounds, as before) decides among those few.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np


def memory_owner(storage: Any) -> Any:
    """The object at the end of ``storage``'s chain of views: the array owning the memory,
    or the foreign object (a pool block, bytes, an exporter behind a memoryview) it came
    from. Anything that is not an array or a memoryview is its own owner."""
    while True:
        if isinstance(storage, np.ndarray):
            base = storage.base
            if base is None:
                return storage
            storage = base
        elif isinstance(storage, memoryview):
            storage = storage.obj
        else:
            return storage


class OverlapIndex:
    """Storages indexed by memory owner. ``by_memory=False`` (device memory, not host arrays):
    only the very same storage object counts as overlapping."""

    __slots__ = ("_by_owner", "_by_memory")

    def __init__(self, storages: Iterable[Any] = (), by_memory: bool = True):
        self._by_memory = by_memory
        self._by_owner: dict[int, list[tuple[int, Any]]] = {}
        for index, storage in enumerate(storages):
            self.add(index, storage)

    def add(self, index: int, storage: Any) -> None:
        """Index ``storage`` under ``index`` (the caller's number for it)."""
        key = id(memory_owner(storage) if self._by_memory else storage)
        self._by_owner.setdefault(key, []).append((index, storage))

    def overlapping(self, storage: Any) -> list[int]:
        """The indices of the stored storages that may share memory with ``storage``."""
        key = id(memory_owner(storage) if self._by_memory else storage)
        same_owner = self._by_owner.get(key)
        if not same_owner:
            return []
        return [
            index
            for index, other in same_owner
            if other is storage or (self._by_memory and _may_share(other, storage))
        ]


def _may_share(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)
