"""The user-facing device: a plugin device plus the backend it belongs to.

Printed and parsed as ``"platform:id"`` (``"interpreter:0"``, ``"tpusim:3"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from hlort.plugin import api
from hlort.plugin.capabilities import MemoryStats

if TYPE_CHECKING:
    from hlort.runtime.client import Backend


class Device:
    """Equal devices are the same plugin device; usable as dict keys."""

    __slots__ = ("backend", "raw")

    def __init__(self, backend: Backend, raw: api.Device):
        self.backend = backend
        self.raw = raw

    @property
    def platform(self) -> str:
        return self.backend.platform

    @property
    def id(self) -> int:
        return self.raw.id

    @property
    def kind(self) -> str:
        return self.raw.kind

    @property
    def local_hardware_id(self) -> int:
        return self.raw.local_hardware_id

    def attributes(self) -> Mapping[str, object]:
        return self.raw.attributes()

    def memory_stats(self) -> MemoryStats:
        return self.raw.memory_stats()

    def memory_spaces(self):
        return self.raw.memory_spaces()

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.raw is self.raw

    def __hash__(self) -> int:
        return id(self.raw)  # as __eq__: by the raw device's identity (it may be unhashable)

    def __str__(self) -> str:
        return f"{self.platform}:{self.id}"

    def __repr__(self) -> str:
        return f"Device({self}, kind={self.kind!r})"
