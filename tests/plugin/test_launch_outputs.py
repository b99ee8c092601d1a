"""One execution's outputs: one event completes them all, their bytes are counted at once, the
arguments' holds are taken all or none, and a dropped output frees its storage exactly once."""

import gc
import threading

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError, ResourceExhausted
from hlort.ir import Opcode
from hlort.plugin.api import CompileOptions
from hlort.plugin.base import AsyncValue, SimpleBuffer
from hlort.plugin.base.buffer import hold_arguments, release_holds
from hlort.plugin.base.events import ElementOf
from hlort.plugin.interpreter_backend import InterpreterPlugin

F32_3 = shape.array("f32", [3])


@pytest.fixture
def client():
    c = InterpreterPlugin(device_count=1).create_client()
    yield c
    c.close()


def three_outputs():
    b = Builder("three")
    x, y = b.parameter(F32_3), b.parameter(F32_3)
    return b.build(b.op(Opcode.TUPLE, (b.add(x, y), b.op(Opcode.MULTIPLY, (x, y)), y)))


def put(client, values):
    return client.buffer_from_host(np.asarray(values, np.float32), client.devices()[0])


def test_element_of_follows_the_whole():
    whole = AsyncValue("launch")
    parts = [ElementOf(whole, k) for k in range(2)]
    seen = []
    parts[1].on_ready(seen.append)
    assert not parts[0].is_ready() and parts[0].error() is None
    whole.set_result(["a", "b"])
    assert [p.result() for p in parts] == ["a", "b"] and seen == [None]
    failed = AsyncValue("launch")
    part = ElementOf(failed, 0)
    failed.set_error(ResourceExhausted("no room"))
    assert part.is_ready() and part.error().code is ErrorCode.RESOURCE_EXHAUSTED
    with pytest.raises(HlortError, match="no room"):
        part.result()
    with pytest.raises(HlortError, match="timed out"):
        ElementOf(AsyncValue("never"), 0).wait(0.01)


def test_outputs_count_once_each_and_free_once_when_dropped(client):
    device = client.devices()[0]
    exe = client.compile(three_outputs(), CompileOptions())
    x, y = put(client, [1, 2, 3]), put(client, [4, 5, 6])
    gc.collect()
    before = device.memory_stats()
    [outs] = exe.execute([[x, y]])
    np.testing.assert_array_equal(outs[1].to_host().result(10), [4, 10, 18])
    during = device.memory_stats()
    assert during.bytes_in_use == before.bytes_in_use + 3 * 12
    assert during.num_allocs == before.num_allocs + 3
    outs[0].delete()
    assert device.memory_stats().bytes_in_use == before.bytes_in_use + 2 * 12
    del outs
    gc.collect()
    assert device.memory_stats().bytes_in_use == before.bytes_in_use
    assert not x.is_deleted() and not y.is_deleted()
    np.testing.assert_array_equal(x.to_host().result(10), [1, 2, 3])


def test_outputs_past_the_bytes_limit_are_refused_all_at_once(client):
    device = client.devices()[0]
    exe = client.compile(three_outputs(), CompileOptions())
    x, y = put(client, [1, 2, 3]), put(client, [4, 5, 6])
    gc.collect()
    in_use = device.memory_stats().bytes_in_use
    device.bytes_limit = in_use + 2 * 12  # room for two of the three outputs
    try:
        with pytest.raises(HlortError) as info:
            exe.execute([[x, y]])
        assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
        assert device.memory_stats().bytes_in_use == in_use
    finally:
        device.bytes_limit = None
    assert exe.execute([[x, y]])[0][2].to_host().result(10).tolist() == [4, 5, 6]


def test_holds_are_taken_all_or_none_and_name_the_first_dead_argument(client):
    a, b, c = (put(client, [k, k, k]) for k in range(3))
    b.delete()
    c.delete()
    with pytest.raises(HlortError) as info:
        hold_arguments([a, b, c], [], lambda i: f"use argument {i}")
    assert "use argument 1" in info.value.message and b.name in info.value.message
    a.delete()  # no hold was left on it: its storage goes now
    assert a.is_deleted()
    d, e = put(client, [1, 1, 1]), put(client, [2, 2, 2])
    storages = hold_arguments([d, e, d], [1], lambda i: "")
    assert [s.result() for s in storages][1].tolist() == [2, 2, 2]
    d.delete()  # held twice: freed after the second release only
    release_holds([d])
    assert d._holds == 1
    release_holds([d])
    assert d._holds == 0 and e._holds == 0


def test_a_donation_waiting_for_holds_wakes_when_they_are_released_together(client):
    a, b = put(client, [1, 2, 3]), put(client, [4, 5, 6])
    hold_arguments([a, b], [], lambda i: "")
    donated = []
    waiter = threading.Thread(target=lambda: donated.append(a.donate("a test", timeout_s=30)))
    waiter.start()
    waiter.join(0.05)
    assert waiter.is_alive()  # waiting for the hold
    release_holds([a, b])
    waiter.join(30)
    assert donated and a.is_deleted()


def test_a_single_copy_execution_has_no_rendezvous(client):
    exe = client.compile(three_outputs(), CompileOptions())
    assert exe.make_rendezvous(None) is None
    replicated = InterpreterPlugin(device_count=2).create_client()
    try:
        exe2 = replicated.compile(three_outputs(), CompileOptions(num_replicas=2))
        assert exe2.make_rendezvous(None) is not None
    finally:
        replicated.close()


def test_a_donated_buffer_frees_nothing_when_collected(client):
    device = client.devices()[0]
    freed = []
    original = device.free
    device.free = lambda storage: freed.append(id(storage)) or original(storage)
    buf = SimpleBuffer(device, F32_3, AsyncValue("x"))
    buf._storage.set_result(np.zeros(3, np.float32))
    storage = buf.donate("a test")
    del buf
    gc.collect()
    assert freed == []
    device.free(storage.result())
    device.track_free(12)
