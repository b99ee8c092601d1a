"""GpuDevice: one GPU as a :class:`SimpleDevice`: a stream, a caching allocator, an event watcher.

Storage is a :class:`DeviceBlock`. The device's work queue thread enqueues work on the device's
one stream (transfers, launches) and returns; values complete when the stream event recorded
after the work fires (gpu_events.py), so ``Buffer.ready_event()`` means the data is on the
device. Host-to-device transfers stage the caller's array as the host-buffer semantics require
and keep it alive until the copy has finished; device-to-host copies wait for their own event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hlort.plugin.base.events import AsyncValue
from hlort.plugin.base.gpu_allocator import CachingAllocator, DeviceBlock
from hlort.plugin.base.gpu_driver import GpuDeviceProperties, GpuDriver
from hlort.plugin.base.gpu_events import StreamEventWatcher
from hlort.plugin.base.simple_device import SimpleDevice
from hlort.plugin.capabilities import MemoryStats
from hlort.shape import ArrayShape

if TYPE_CHECKING:
    from hlort.plugin.base.simple_client import SimpleClient


class GpuDevice(SimpleDevice):
    """A device of a :class:`~hlort.plugin.base.gpu_client.GpuClient`."""

    host_memory = False
    supports_zero_copy = False

    def __init__(
        self,
        client: SimpleClient,
        device_id: int,
        driver: GpuDriver,
        properties: GpuDeviceProperties,
    ):
        super().__init__(
            client,
            device_id,
            properties.name,
            local_hardware_id=properties.ordinal,
            bytes_limit=properties.total_memory,
            attributes=properties.attributes(),
        )
        self.driver = driver
        self.properties = properties
        self.ordinal = properties.ordinal
        self.where = f"{client.platform_name}:{device_id}"
        self.stream = driver.stream_create(self.ordinal)
        self.allocator = CachingAllocator(driver, self.ordinal, self.where, self.synchronize)
        self.events = StreamEventWatcher(driver, self.ordinal, self.where)

    # -- stream --------------------------------------------------------------------------------
    def synchronize(self) -> None:
        """Wait for everything enqueued on the stream so far (not for the work queue)."""
        self.driver.stream_synchronize(self.stream)

    def after_stream(self, value: AsyncValue, result=None, keep_alive=None, then=None):
        """Complete ``value`` with ``result`` once the work enqueued so far has finished."""
        return self.events.record(self.stream, value, result, keep_alive, then)

    def close(self) -> None:
        """Finish queued work, then release the stream and the cached memory."""
        self.queue.close()
        self.events.close()
        self.allocator.release_cache()
        self.driver.stream_destroy(self.stream)

    # -- storage hooks -------------------------------------------------------------------------
    def allocate(self, shape: ArrayShape) -> DeviceBlock:
        return self.allocator.allocate(shape.nbytes)

    def allocate_bytes(self, nbytes: int) -> DeviceBlock:
        return self.allocator.allocate(nbytes)

    def free(self, storage: DeviceBlock) -> None:
        self.allocator.free(storage)

    def copy_in(self, storage: DeviceBlock, array: np.ndarray) -> None:
        """Enqueue host -> device; the caller keeps ``array`` alive until the stream passes."""
        if storage.nbytes:
            self.driver.copy_h2d_async(storage.pointer, _contiguous(array), self.stream)

    def copy_out(self, storage: DeviceBlock, shape: ArrayShape) -> np.ndarray:
        host = np.empty(shape.dims, dtype=shape.dtype.numpy)
        if storage.nbytes:
            self.driver.copy_d2h_async(host, storage.pointer, self.stream)
            done = self.after_stream(AsyncValue(f"copy to host from {self.where}"))
            done.wait()
        return host

    def duplicate(self, storage: DeviceBlock, shape: ArrayShape) -> DeviceBlock:
        new = self.allocate(shape)
        if storage.nbytes:
            self.driver.copy_d2d_async(new.pointer, storage.pointer, storage.nbytes, self.stream)
        return new

    def storage_from_host(self, array: np.ndarray, shape: ArrayShape, owned: bool) -> DeviceBlock:
        """Synchronous form (the base's paths that need the data there when this returns)."""
        block = self.allocate(shape)
        host = _contiguous(array)
        self.copy_in(block, host)
        self.after_stream(AsyncValue(f"transfer to {self.where}"), keep_alive=host).wait()
        return block

    # -- statistics ----------------------------------------------------------------------------
    def memory_stats(self) -> MemoryStats:
        stats = self.allocator.stats()
        return MemoryStats(
            bytes_in_use=stats.bytes_in_use,
            peak_bytes_in_use=stats.peak_bytes_in_use,
            num_allocs=stats.num_allocs,
            bytes_limit=self.properties.total_memory,
            largest_alloc_size=stats.largest_alloc_size,
        )

    def memory_info(self) -> dict[str, int]:
        """The driver's free/total and this allocator's reserved/cached bytes (for tools)."""
        free, total = self.driver.mem_info(self.ordinal)
        stats = self.allocator.stats()
        return {
            "free": free,
            "total": total,
            "reserved": stats.bytes_reserved,
            "cached": stats.bytes_cached,
        }


def _contiguous(array: np.ndarray) -> np.ndarray:
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)
