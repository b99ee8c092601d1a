"""Buffer lifecycle: ready events, delete, holds, memory accounting, copies between devices."""

import gc
import threading

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.base import SimpleBuffer, SimpleClient, SimpleDevice
from hlort.plugin.interpreter_backend import InterpreterExecutable, InterpreterPlugin


@pytest.fixture
def client():
    c = InterpreterPlugin(device_count=2).create_client()
    yield c
    c.close()


def test_delete_then_use_is_failed_precondition_naming_the_buffer(client):
    buf = client.buffer_from_host(np.ones(3, np.float32), client.devices()[0])
    assert not buf.is_deleted()
    buf.delete()
    buf.delete()  # idempotent
    assert buf.is_deleted()
    with pytest.raises(HlortError) as info:
        buf.to_host()
    assert info.value.code is ErrorCode.FAILED_PRECONDITION
    assert buf.name in info.value.message and "deleted" in info.value.message
    assert "f32[3]" in info.value.message


def test_memory_stats_track_live_buffers(client):
    device = client.devices()[0]
    before = device.memory_stats().bytes_in_use
    bufs = [client.buffer_from_host(np.ones(256, np.float32), device) for _ in range(4)]
    stats = device.memory_stats()
    assert stats.bytes_in_use == before + 4 * 1024
    assert stats.peak_bytes_in_use >= stats.bytes_in_use
    for b in bufs:
        b.delete()
    assert device.memory_stats().bytes_in_use == before


def test_garbage_collected_buffers_free_their_memory(client):
    device = client.devices()[0]
    before = device.memory_stats().bytes_in_use
    client.buffer_from_host(np.ones(1000, np.float64), device)
    gc.collect()
    assert device.memory_stats().bytes_in_use == before


class RecordingDevice(SimpleDevice):
    """Counts frees, to check storage is freed once and only after its last use."""

    host_memory = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.freed = []

    def allocate(self, shape):
        return np.empty(shape.dims, shape.dtype.numpy)

    def free(self, storage):
        self.freed.append(id(storage))


class RecordingClient(SimpleClient):
    executable_class = InterpreterExecutable

    def create_devices(self):
        return [RecordingDevice(self, 0, "rec")]


def test_delete_during_pending_work_frees_after_the_work():
    client = RecordingClient(platform_name="rec")
    device = client.devices()[0]
    buf = client.buffer_from_host(np.arange(4, dtype=np.float32), device)
    gate = threading.Event()
    device.queue.enqueue(lambda: gate.wait(10))  # the queue is busy
    host = buf.to_host()  # queued behind the gate, holding the buffer
    buf.delete()
    assert buf.is_deleted() and device.freed == []
    gate.set()
    np.testing.assert_array_equal(host.result(10), np.arange(4, dtype=np.float32))
    device.queue.synchronize(10)
    assert len(device.freed) == 1
    client.close()


def test_storage_errors_reach_the_ready_event_and_to_host(client):
    from hlort.plugin.base import failed_value
    from hlort.shape import array

    device = client.devices()[0]
    broken = SimpleBuffer(device, array("f32", [2]), failed_value(HlortError("transfer broke")))
    with pytest.raises(HlortError, match="transfer broke"):
        broken.ready_event().wait()
    with pytest.raises(HlortError, match="transfer broke"):
        broken.to_host().result(10)


def test_copy_to_device_between_devices_of_one_client(client):
    d0, d1 = client.devices()
    buf = client.buffer_from_host(np.arange(5, dtype=np.int32), d0)
    moved = buf.copy_to_device(d1)
    assert moved.device is d1 and moved.shape == buf.shape
    np.testing.assert_array_equal(moved.to_host().result(10), np.arange(5))
    buf.delete()
    np.testing.assert_array_equal(moved.to_host().result(10), np.arange(5))


def test_copy_to_another_clients_device_is_unimplemented(client):
    other = InterpreterPlugin().create_client()
    buf = client.buffer_from_host(np.zeros(2, np.float32), client.devices()[0])
    with pytest.raises(HlortError) as info:
        buf.copy_to_device(other.devices()[0])
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    other.close()
