"""Opaque PJRT handles: the pointers jaxlib holds are numbers that name Python objects.

A handle is never reused (a counter), so the trampoline's per-handle answer cache can never
answer for a newer object that got an old address. Handles are multiples of 16 so they look
like the aligned pointers jaxlib expects.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any


class HandleTable:
    def __init__(self) -> None:
        self._objects: dict[int, Any] = {}
        self._ids: dict[int, int] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def new(self, obj: Any) -> int:
        with self._lock:
            handle = next(self._counter) * 16 + 0x100000
            self._objects[handle] = obj
            return handle

    def stable(self, obj: Any) -> int:
        """The one handle of a long-lived object (device, memory, client): the same each call."""
        with self._lock:
            handle = self._ids.get(id(obj))
            if handle is not None and self._objects.get(handle) is obj:
                return handle
            handle = next(self._counter) * 16 + 0x100000
            self._objects[handle] = obj
            self._ids[id(obj)] = handle
            return handle

    def get(self, handle: int | None) -> Any:
        obj = self._objects.get(handle or 0)
        if obj is None:
            from hlort.errors import InvalidArgument

            raise InvalidArgument(
                f"unknown or destroyed PJRT handle {handle:#x}"
                if handle
                else "a required PJRT handle is null"
            )
        return obj

    def drop(self, handle: int | None) -> Any:
        with self._lock:
            obj = self._objects.pop(handle or 0, None)
            if obj is not None and self._ids.get(id(obj)) == handle:
                del self._ids[id(obj)]
            return obj

    def __len__(self) -> int:
        return len(self._objects)


HANDLES = HandleTable()
