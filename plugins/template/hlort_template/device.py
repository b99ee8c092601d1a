"""TemplateDevice: a device whose buffers live in its own :class:`Arena`.

:class:`~hlort.plugin.base.SimpleDevice` does the rest: a work queue (the device's "stream";
transfers and launches run there in order), ready events, memory statistics. A plugin only says
how to allocate, free, and copy in and out of its memory ("storage" is whatever handle it
uses: here an arena :class:`Block`). ``stream`` is the device's compute engine: launches
enqueue their kernels there and return at once (executable.py), like a GPU stream.
"""

from __future__ import annotations

import numpy as np

from hlort.plugin.base import SimpleDevice, WorkQueue
from hlort.shape import ArrayShape
from hlort_template.arena import Arena, Block


class TemplateDevice(SimpleDevice):
    host_memory = False  # storage is a Block in our arena, not a NumPy array
    supports_zero_copy = False  # device memory can never alias a host array

    def __init__(self, client, device_id: int, arena_bytes: int):
        super().__init__(
            client,
            device_id,
            "template-device",
            bytes_limit=arena_bytes,
            attributes={"arena_bytes": arena_bytes},
        )
        self.arena = Arena(arena_bytes, name=f"{client.platform_name}:{device_id}")
        self.stream = WorkQueue(f"{client.platform_name}:{device_id}/compute")

    def allocate(self, shape: ArrayShape) -> Block:
        return self.arena.allocate(shape.nbytes)

    def free(self, storage: Block) -> None:
        self.arena.free(storage)

    def copy_in(self, storage: Block, array: np.ndarray) -> None:
        self.arena.write(storage, array)

    def copy_out(self, storage: Block, shape: ArrayShape) -> np.ndarray:
        return self.arena.read(storage, shape.dtype.numpy, shape.dims)
