"""A garbage-collected buffer's finalizer takes no lock: it queues its storage on the device, which
frees it at its next storage call. Each hazard is forced (a collection while the lock is held)
and watched (a deadlock fails the test instead of hanging the suite)."""

import gc
import logging
import threading
import weakref

import numpy as np
import pytest

from hlort.errors import FailedPrecondition
from hlort.plugin.base import AsyncValue, SimpleBuffer, SimpleClient, SimpleDevice
from hlort.plugin.base.buffer import hold_arguments
from hlort.plugin.interpreter_backend import InterpreterExecutable, InterpreterPlugin
from hlort.shape import array
from hlort.testing.finalizer_hazards import (
    CollectingLock,
    drop_in_cycle,
    finishes_within,
    in_threads,
    manual_gc,
)

WATCHDOG_S = 20.0
F32_256 = array("f32", [256])


class LockedHeap:
    """A driver-like allocator, as a vendor writes one: handles under one plain Lock."""

    def __init__(self):
        self._lock = threading.Lock()
        self.live: dict[int, bytearray] = {}
        self.freed: list[int] = []
        self._next = 0

    def allocate(self, nbytes: int) -> int:
        with self._lock:
            self._next += 1
            self.live[self._next] = bytearray(nbytes)
            return self._next

    def free(self, handle: int) -> None:
        with self._lock:
            del self.live[handle]  # KeyError: a double free
            self.freed.append(handle)


class HeapDevice(SimpleDevice):
    host_memory = False
    supports_zero_copy = False

    def __init__(self, client):
        super().__init__(client, 0, "heap")
        self.heap = LockedHeap()

    def allocate(self, shape):
        return self.heap.allocate(shape.nbytes)

    def free(self, storage):
        self.heap.free(storage)

    def copy_in(self, storage, host):
        self.heap.live[storage][:] = np.ascontiguousarray(host).tobytes()

    def copy_out(self, storage, shape):
        raw = bytes(self.heap.live[storage])
        return np.frombuffer(raw, shape.dtype.numpy).reshape(shape.dims).copy()


class HeapClient(SimpleClient):
    executable_class = InterpreterExecutable

    def create_devices(self):
        return [HeapDevice(self)]


def put(client, values=None):
    host = np.arange(256, dtype=np.float32) if values is None else values
    buf = client.buffer_from_host(host, client.devices()[0])
    buf.ready_event().wait(WATCHDOG_S)
    return buf


def test_a_vendors_storage_hooks_drain_first_without_writing_anything():
    class StatsDevice(HeapDevice):
        def memory_stats(self):  # a vendor's own numbers: true only after the drain
            stats = super().memory_stats()
            assert not self._deferred
            return stats

    assert HeapDevice.allocate.drains_first and HeapDevice.free.drains_first
    assert StatsDevice.memory_stats.drains_first and not HeapDevice.frees_nothing
    assert SimpleDevice.frees_nothing
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    device.__class__ = StatsDevice
    with manual_gc():
        drop_in_cycle(put(client))
        gc.collect()
    assert device.memory_stats().bytes_in_use == 0 and device.heap.live == {}
    client.close()


def test_a_buffer_collected_inside_the_allocators_lock_is_freed_at_the_next_call():
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    heap = device.heap

    def check():
        before = device.memory_stats().bytes_in_use
        drop_in_cycle(put(client))
        heap._lock = lock = CollectingLock(heap._lock)
        kept = put(client)  # the collection runs inside heap.allocate, with its lock held
        assert lock.collected > 0, "the collection inside the lock found no garbage"
        assert device.memory_stats().bytes_in_use == before + kept.shape.nbytes
        assert len(heap.live) == 1 and len(heap.freed) == 1
        np.testing.assert_array_equal(kept.to_host().result(WATCHDOG_S), np.arange(256))
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "allocating while a finalizer frees")


def test_a_buffer_collected_inside_the_stats_lock_is_counted_at_the_next_call():
    client = InterpreterPlugin().create_client()
    device = client.devices()[0]

    def check():
        before = device.memory_stats()
        drop_in_cycle(put(client))
        device._stats_lock = lock = CollectingLock(device._stats_lock)
        kept = put(client)  # track_alloc collects with the stats lock held
        assert lock.collected > 0
        after = device.memory_stats()
        assert after.bytes_in_use == before.bytes_in_use + kept.shape.nbytes
        assert after.num_allocs == before.num_allocs + 2
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "counting an allocation while a finalizer frees")


def test_a_host_view_collected_inside_the_holds_lock_lets_go_at_the_next_call():
    client = InterpreterPlugin().create_client()
    found = []

    def collect_while_holding(index: int) -> str:  # called with the holds lock held
        found.append(gc.collect())
        return f"use argument {index}"

    def check():
        viewed = put(client)
        drop_in_cycle(viewed.host_view())
        dead = put(client)
        dead.delete()
        with pytest.raises(FailedPrecondition, match="use argument 0"):
            hold_arguments([dead], (), collect_while_holding)
        assert found and found[0] > 0
        viewed.donate("a test")  # the view's hold is gone: donation is allowed
        assert viewed.is_deleted()
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "taking holds while a host view is collected")


def test_memory_stats_are_true_after_collection_and_the_storage_freed_once():
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    before = device.memory_stats().bytes_in_use
    with manual_gc():
        for _ in range(5):
            drop_in_cycle(put(client))
        gc.collect()
    assert len(device.heap.live) == 5  # queued, not yet freed: no storage call since
    assert device.memory_stats().bytes_in_use == before
    assert device.heap.live == {} and len(set(device.heap.freed)) == 5
    client.close()


def test_storage_still_being_made_when_collected_is_freed_when_it_is_done():
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    storage = AsyncValue("a transfer still queued")
    with manual_gc():
        drop_in_cycle(SimpleBuffer(device, F32_256, storage))
        gc.collect()
    assert device.memory_stats().bytes_in_use == F32_256.nbytes  # its storage is not here yet
    storage.set_result(device.heap.allocate(F32_256.nbytes))
    assert device.heap.live == {} and device.memory_stats().bytes_in_use == 0
    client.close()


def test_a_host_memory_device_lets_ready_storage_go_at_collection():
    client = InterpreterPlugin().create_client()
    buf = put(client)
    storage = weakref.ref(buf.storage_now())
    with manual_gc():
        drop_in_cycle(buf)
        del buf
        gc.collect()
    assert storage() is None  # only the byte count waits for the drain
    assert client.devices()[0].memory_stats().bytes_in_use == 0
    client.close()


def test_a_failing_free_is_logged_and_the_rest_still_drain(caplog):
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    first, second = put(client), put(client)
    device.heap.free(first.storage_now())  # a plugin bug: the drain's free will fail
    with manual_gc():
        drop_in_cycle(first)
        drop_in_cycle(second)
        del first, second
        gc.collect()
    with caplog.at_level(logging.ERROR, logger="hlort.plugin"):
        assert device.memory_stats().bytes_in_use == 0
    assert "freeing a garbage-collected buffer failed" in caplog.text
    assert device.heap.live == {}
    client.close()


def test_closing_the_client_frees_what_is_queued():
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    with manual_gc():
        drop_in_cycle(put(client))
        gc.collect()
    assert len(device.heap.live) == 1
    client.close()
    assert device.heap.live == {}


def test_eight_threads_dropping_buffers_in_cycles_leave_nothing_behind():
    client = HeapClient(platform_name="heap")
    device = client.devices()[0]
    device.heap._lock = CollectingLock(device.heap._lock)
    device._stats_lock = CollectingLock(device._stats_lock)

    def work(k: int) -> None:
        for r in range(20):
            host = np.full(256, k * 100 + r, np.float32)
            buf = put(client, host)
            np.testing.assert_array_equal(buf.to_host().result(WATCHDOG_S), host)
            drop_in_cycle(buf)
            del buf

    def check():
        in_threads(work)
        gc.collect()
        assert device.memory_stats().bytes_in_use == 0
        assert device.heap.live == {} and len(device.heap.freed) == 8 * 20
        client.close()

    finishes_within(3 * WATCHDOG_S, check, "eight threads allocating and dropping buffers")
