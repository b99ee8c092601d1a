"""A buffer's finalizer can run (the garbage collector) in the middle of an HBM allocate or free
of the same thread. It must not free its block there (the allocator's lock is held: a plain Lock
hung the conformance suite's eight-thread test): the device queues the block and frees it at its
next storage call, once the operation in progress is done. Each test makes and closes its client
inside the watched thread: a deadlock fails the test, and nothing waits for the stuck thread."""

import gc

import numpy as np

from hlort.testing.finalizer_hazards import (
    CollectingLock,
    drop_in_cycle,
    finishes_within,
    in_threads,
    manual_gc,
)
from hlort_tpusim.plugin import TpuSimPlugin

WATCHDOG_S = 20.0
VALUES = np.arange(256, dtype=np.float32)  # 1024 bytes: two 512-byte granules


def _put(client):
    buf = client.buffer_from_host(VALUES, client.devices()[0])
    buf.ready_event().wait(WATCHDOG_S)
    return buf


def test_a_free_from_inside_allocate_waits_for_it_and_then_happens():
    def check():
        client = TpuSimPlugin().create_client({"hbm_bytes": 8 * 1024})
        device = client.devices()[0]
        hbm = device.hbm
        drop_in_cycle(_put(client))
        [victim] = hbm.live_allocations()
        hbm._lock = lock = CollectingLock(hbm._lock)
        kept = _put(client)  # the collection runs inside hbm.allocate, with its lock held
        assert lock.collected > 0
        stats = device.memory_stats()  # drains: the dropped block is back before the numbers
        assert victim.freed
        assert stats.bytes_in_use == hbm.rounded(VALUES.nbytes) == hbm.bytes_in_use
        assert hbm.live_allocations()[0].uid != victim.uid
        np.testing.assert_array_equal(kept.to_host().result(WATCHDOG_S), VALUES)
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "an HBM allocate while a finalizer frees")


def test_a_free_from_inside_free_is_done_after_it():
    def check():
        client = TpuSimPlugin().create_client({"hbm_bytes": 8 * 1024})
        device = client.devices()[0]
        hbm = device.hbm
        first, second = _put(client), _put(client)
        drop_in_cycle(second)
        del second
        hbm._lock = lock = CollectingLock(hbm._lock)
        first.delete()  # the collection runs inside hbm.free, with its lock held
        assert lock.collected > 0
        assert device.memory_stats().bytes_in_use == 0
        assert hbm.fragments == 1 and hbm.live_allocations() == []
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "an HBM free while a finalizer frees")


def test_eight_threads_of_dropped_buffers_give_all_of_hbm_back():
    client = TpuSimPlugin().create_client({"hbm_bytes": 1 << 20})
    device = client.devices()[0]
    device.hbm._lock = CollectingLock(device.hbm._lock)

    def work(k: int) -> None:
        for r in range(10):
            host = np.full(256, k * 10 + r, np.float32)
            buf = client.buffer_from_host(host, device)
            np.testing.assert_array_equal(buf.to_host().result(WATCHDOG_S), host)
            drop_in_cycle(buf)
            del buf

    def check():
        in_threads(work)
        gc.collect()
        assert device.memory_stats().bytes_in_use == 0
        assert device.hbm.fragments == 1 and device.hbm.live_allocations() == []
        client.close()

    finishes_within(3 * WATCHDOG_S, check, "eight threads allocating and dropping HBM buffers")
