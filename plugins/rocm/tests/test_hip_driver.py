"""The HIP driver against a fake of hip-python's calling convention (no AMD GPU exists where
hlort is tested): every protocol call, error mapping, and the shared GPU runtime on top."""

import ctypes

import numpy as np
import pytest
from fake_hip import FakeHip

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.base.gpu_client import GpuClient
from hlort.plugin.base.gpu_driver import GpuOutOfMemory
from hlort_rocm import RocmPlugin
from hlort_rocm.client import RocmClient
from hlort_rocm.hip_driver import HipDriver, kernel_arguments
from hlort_rocm.runtime_messages import NO_RUNTIME


def test_devices_properties_and_version():
    driver = HipDriver(FakeHip(devices=2))
    assert driver.device_count() == 2
    props = driver.properties(1)
    assert props.arch == "gfx942" and props.name == "AMD Instinct MI300X"  # gcnArchName base
    assert props.warp_size == 64 and props.max_shared_memory_per_block == 64 << 10
    assert props.pci_bus_id == "0000:1c:00.0"
    assert props.peak_bandwidth_bytes_s == pytest.approx(2 * 1.3e9 * 8192 / 8)
    assert driver.version() == "HIP runtime 6.2.41134, driver 6.2.0"
    assert HipDriver(FakeHip(devices=0)).device_count() == 0  # hipErrorNoDevice


def test_memory_copies_and_the_device_each_call_selects():
    hip = FakeHip(devices=2)
    driver = HipDriver(hip)
    stream = driver.stream_create(1)
    pointer = driver.mem_alloc(1, 64)
    assert hip.owner[pointer] == 1
    data = np.arange(16, dtype=np.float32)
    driver.copy_h2d_async(pointer, data, stream)
    other = driver.mem_alloc(1, 64)
    driver.copy_d2d_async(other, pointer, 64, stream)
    driver.memset_async(other, 0xFF, 4, stream)
    back = np.empty(16, np.float32)
    driver.copy_d2h_async(back, other, stream)
    driver.stream_synchronize(stream)
    assert np.isnan(back[0]) and np.array_equal(back[1:], data[1:])
    assert driver.mem_info(1) == (hip.memory - 128, hip.memory)
    driver.mem_free(1, pointer)
    with pytest.raises(HlortError) as info:
        driver.copy_d2h_async(np.empty(16, np.float32)[::2], other, stream)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_errors_map_to_pjrt_codes():
    hip = FakeHip(memory=1024)
    driver = HipDriver(hip)
    with pytest.raises(GpuOutOfMemory) as info:
        driver.mem_alloc(0, 4096)
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
    with pytest.raises(HlortError) as info:
        driver.select(5)
    assert info.value.code is ErrorCode.UNAVAILABLE
    assert "hipErrorInvalidDevice" in info.value.message
    with pytest.raises(HlortError) as info:
        driver.module_load(0, b"not a code object")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "gfx target" in info.value.message
    with pytest.raises(HlortError) as info:
        driver.mem_free(0, 12345)
    assert info.value.code is ErrorCode.INTERNAL and "hipFree failed" in info.value.message


def test_without_the_runtime_every_call_is_unavailable_naming_the_library():
    class NoRuntime:
        def __getattr__(self, name):
            def call(*args):
                raise RuntimeError("failed to dlopen 'b'libamdhip64.so'': cannot open")

            return call

    with pytest.raises(HlortError) as info:
        HipDriver(NoRuntime()).device_count()
    assert info.value.code is ErrorCode.UNAVAILABLE and NO_RUNTIME in info.value.message


def test_events_query_until_ready():
    hip = FakeHip()
    driver = HipDriver(hip)
    stream = driver.stream_create(0)
    event = driver.event_create(0)
    driver.event_record(event, stream)
    hip.pending_queries = 2
    assert [driver.event_query(event) for _ in range(3)] == [False, False, True]
    start, end = driver.event_create(0, timing=True), driver.event_create(0, timing=True)
    assert driver.event_elapsed_ms(start, end) == 1.5


def test_modules_functions_and_launch_arguments():
    hip = FakeHip()
    driver = HipDriver(hip)
    module = driver.module_load(0, b"\x7fELF...k0_add...")
    function = driver.function(module, "k0_add")
    with pytest.raises(HlortError) as info:
        driver.function(module, "missing")
    assert info.value.code is ErrorCode.NOT_FOUND and "missing" in info.value.message
    stream = driver.stream_create(0)
    driver.launch(function, (4, 1, 1), (256, 1, 1), 0, stream, [0x1000, np.int32(7)])
    name, grid, block, shared, extra = hip.launches[0]
    assert (name, grid, block, shared) == ("k0_add", (4, 1, 1), (256, 1, 1), 0)
    assert isinstance(extra[0], ctypes.c_void_p) and extra[0].value == 0x1000
    assert isinstance(extra[1], ctypes.c_int32) and extra[1].value == 7
    with pytest.raises(HlortError) as info:
        kernel_arguments([1.5])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


class FakeRocmClient(RocmClient):
    def create_driver(self, options):
        return HipDriver(FakeHip(devices=2, memory=1 << 20))


@pytest.fixture
def client():
    c = FakeRocmClient(RocmPlugin())
    yield c
    c.close()


def test_the_gpu_runtime_runs_on_the_hip_driver(client):
    assert isinstance(client, GpuClient)
    assert [d.properties.arch for d in client.devices()] == ["gfx942", "gfx942"]
    for dtype in (np.float32, np.int8, np.float64, np.bool_):
        data = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
        buf = client.buffer_from_host(data, client.devices()[1])
        np.testing.assert_array_equal(buf.to_host().result(10), data)
    stats = client.devices()[1].memory_stats()
    assert stats.bytes_in_use > 0 and stats.bytes_limit == 1 << 20
    with pytest.raises(HlortError) as info:
        client.buffer_from_host(np.zeros(1 << 19, np.float32), client.devices()[0])
    assert info.value.code is ErrorCode.RESOURCE_EXHAUSTED
