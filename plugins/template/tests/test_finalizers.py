"""Buffers freed by the garbage collector never re-enter the arena: the collector may run a
buffer's finalizer inside ``Arena.allocate`` (its lock held), and the base queues the block for
the device's next storage call instead of freeing it there (a plain Lock would deadlock). Keep
these tests when you replace the arena with your driver's allocator: point ``CollectingLock`` at
its lock. Each test makes and closes its client inside the watched thread."""

import gc

import numpy as np

from hlort import Builder, shape
from hlort.plugin.options import CompileOptions
from hlort.testing.finalizer_hazards import (
    CollectingLock,
    drop_in_cycle,
    finishes_within,
    in_threads,
    manual_gc,
)
from hlort_template import TemplatePlugin

WATCHDOG_S = 20.0
ARENA_BYTES = 1 << 20
X = np.arange(256, dtype=np.float32)


def _client():
    return TemplatePlugin().create_client({"device_count": 1, "arena_bytes": ARENA_BYTES})


def _put(client, values=X):
    buf = client.buffer_from_host(values, client.devices()[0])
    buf.ready_event().wait(WATCHDOG_S)
    return buf


def _double():
    b = Builder("double")
    x = b.parameter(shape.array("f32", [256]))
    return b.build(b.add(x, x))


def test_a_buffer_collected_inside_the_arenas_lock_is_freed_at_the_next_call():
    def check():
        client = _client()
        device = client.devices()[0]
        drop_in_cycle(_put(client))
        device.arena._lock = lock = CollectingLock(device.arena._lock)
        kept = _put(client)  # the collection runs inside Arena.allocate, with its lock held
        assert lock.collected > 0
        assert device.memory_stats().bytes_in_use == X.nbytes
        assert device.arena.bytes_free() == ARENA_BYTES - X.nbytes
        np.testing.assert_array_equal(kept.to_host().result(WATCHDOG_S), X)
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "an arena allocate while a finalizer frees")


def test_outputs_collected_inside_the_stats_lock_come_back_before_memory_stats():
    def check():
        client = _client()
        device = client.devices()[0]
        exe = client.compile(_double(), CompileOptions())
        arg = _put(client)
        [[out]] = exe.execute([[arg]])
        np.testing.assert_array_equal(out.to_host().result(WATCHDOG_S), 2 * X)
        drop_in_cycle(out)
        del out
        device._stats_lock = lock = CollectingLock(device._stats_lock)
        [[again]] = exe.execute([[arg]])  # counting its output collects with the lock held
        assert lock.collected > 0
        np.testing.assert_array_equal(again.to_host().result(WATCHDOG_S), 2 * X)
        assert device.memory_stats().bytes_in_use == 2 * X.nbytes
        assert device.arena.bytes_free() == ARENA_BYTES - 2 * X.nbytes
        client.close()

    with manual_gc():
        finishes_within(WATCHDOG_S, check, "an execution while a finalizer frees")


def test_eight_threads_dropping_buffers_and_outputs_give_the_arena_back():
    client = _client()
    device = client.devices()[0]
    exe = client.compile(_double(), CompileOptions())
    device.arena._lock = CollectingLock(device.arena._lock)
    device._stats_lock = CollectingLock(device._stats_lock)

    def work(k: int) -> None:
        for r in range(8):
            host = np.full(256, k * 8 + r, np.float32)
            arg = _put(client, host)
            [[out]] = exe.execute([[arg]])
            np.testing.assert_array_equal(out.to_host().result(WATCHDOG_S), 2 * host)
            drop_in_cycle(arg)
            drop_in_cycle(out)
            del arg, out

    def check():
        in_threads(work)
        gc.collect()
        assert device.memory_stats().bytes_in_use == 0
        assert device.arena.bytes_free() == ARENA_BYTES
        client.close()

    finishes_within(3 * WATCHDOG_S, check, "eight threads executing and dropping buffers")
