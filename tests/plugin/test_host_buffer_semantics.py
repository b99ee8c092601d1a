"""buffer_from_host under PJRT's four host-buffer semantics."""

import ml_dtypes
import numpy as np
import pytest

from hlort.errors import InvalidArgument
from hlort.plugin.api import HostBufferSemantics as S
from hlort.plugin.base import SimpleClient, SimpleDevice
from hlort.plugin.interpreter_backend import InterpreterExecutable, InterpreterPlugin


class HostClient(SimpleClient):
    """Host memory with zero-copy allowed (what a CPU plugin would use)."""

    executable_class = InterpreterExecutable

    def create_devices(self):
        return [SimpleDevice(self, 0, "host")]


@pytest.fixture
def host():
    client = HostClient(platform_name="host")
    yield client, client.devices()[0]
    client.close()


@pytest.fixture
def interp():
    client = InterpreterPlugin().create_client()
    yield client, client.devices()[0]
    client.close()


def test_only_during_call_copies_before_returning(host):
    client, device = host
    array = np.arange(6, dtype=np.float32)
    buf = client.buffer_from_host(array, device, S.IMMUTABLE_ONLY_DURING_CALL)
    array[:] = -1
    np.testing.assert_array_equal(buf.to_host().result(), np.arange(6, dtype=np.float32))


def test_until_transfer_completes_reads_the_array_before_ready(host):
    client, device = host
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    buf = client.buffer_from_host(array, device, S.IMMUTABLE_UNTIL_TRANSFER_COMPLETES)
    buf.ready_event().wait(10)
    array[:] = 0  # allowed once ready
    np.testing.assert_array_equal(buf.to_host().result(), np.arange(6).reshape(2, 3))


def test_mutable_zero_copy_aliases_the_callers_array(host):
    client, device = host
    array = np.arange(4, dtype=np.float64)
    buf = client.buffer_from_host(array, device, S.MUTABLE_ZERO_COPY)
    assert buf.ready_event().is_ready()
    assert np.shares_memory(buf.storage_now(), array)


def test_immutable_zero_copy_aliases_read_only(host):
    client, device = host
    array = np.arange(4, dtype=np.float64)
    buf = client.buffer_from_host(array, device, S.IMMUTABLE_ZERO_COPY)
    storage = buf.storage_now()
    assert np.shares_memory(storage, array)
    assert not storage.flags.writeable
    assert array.flags.writeable  # the caller's array is untouched


def test_zero_copy_falls_back_to_a_copy_for_strided_arrays(host):
    client, device = host
    array = np.arange(10, dtype=np.float32)[::2]
    buf = client.buffer_from_host(array, device, S.IMMUTABLE_ZERO_COPY)
    assert not np.shares_memory(buf.storage_now(), array)
    np.testing.assert_array_equal(buf.to_host().result(), array)


@pytest.mark.parametrize("semantics", list(S))
def test_interpreter_buffers_never_view_caller_arrays(interp, semantics):
    client, device = interp
    array = np.arange(8, dtype=np.float32)
    buf = client.buffer_from_host(array, device, semantics)
    buf.ready_event().wait(10)
    assert not np.shares_memory(buf.storage_now(), array)
    out = buf.to_host().result()
    assert not np.shares_memory(out, buf.storage_now())  # to_host copies too
    np.testing.assert_array_equal(out, array)


def test_shapes_and_dtypes_come_from_the_array(interp):
    client, device = interp
    buf = client.buffer_from_host(np.zeros((2, 3), ml_dtypes.bfloat16), device)
    assert str(buf.shape) == "bf16[2,3]"
    assert buf.dims == (2, 3) and buf.dtype.name == "bf16"
    assert buf.on_device_size_in_bytes() == 12
    scalar = client.buffer_from_host(np.float32(3.5), device)
    assert scalar.dims == () and scalar.to_host().result() == np.float32(3.5)


def test_unknown_dtypes_and_bad_semantics_are_invalid_arguments(interp):
    client, device = interp
    with pytest.raises(InvalidArgument):
        client.buffer_from_host(np.array(["a"]), device)
    with pytest.raises(InvalidArgument, match="HostBufferSemantics"):
        client.buffer_from_host(np.zeros(2), device, "copy")
    other = InterpreterPlugin().create_client()
    with pytest.raises(InvalidArgument, match="does not belong"):
        client.buffer_from_host(np.zeros(2), other.devices()[0])
    other.close()


class DeviceMemory(SimpleDevice):
    """Storage that is not a NumPy array, as on an accelerator."""

    host_memory = False

    def allocate(self, shape):
        return bytearray(shape.nbytes)

    def copy_in(self, storage, array):
        storage[:] = array.tobytes()

    def copy_out(self, storage, shape):
        return np.frombuffer(bytes(storage), shape.dtype.numpy).reshape(shape.dims).copy()


class DeviceMemoryClient(HostClient):
    def create_devices(self):
        return [DeviceMemory(self, 0, "accel")]


def test_until_transfer_completes_on_device_memory_reads_the_array_in_the_queue():
    import threading

    client = DeviceMemoryClient(platform_name="accel")
    device = client.devices()[0]
    gate = threading.Event()
    device.queue.enqueue(lambda: gate.wait(10))
    array = np.zeros(3, np.int32)
    buf = client.buffer_from_host(array, device, S.IMMUTABLE_UNTIL_TRANSFER_COMPLETES)
    copied = client.buffer_from_host(array, device, S.IMMUTABLE_ONLY_DURING_CALL)
    assert not buf.ready_event().is_ready()
    array[:] = 7  # breaks the contract on purpose: shows the read happens later
    gate.set()
    np.testing.assert_array_equal(buf.to_host().result(10), [7, 7, 7])
    np.testing.assert_array_equal(copied.to_host().result(10), [0, 0, 0])
    assert isinstance(buf.storage_now(), bytearray)
    client.close()
