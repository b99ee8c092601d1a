"""The cuda-bindings driver's calls checked against the real binding's signatures, without a GPU.

A stand-in for ``cuda.bindings.driver`` binds every call's arguments to the signature of the real
function of the same name (so a wrong argument count or name fails here) and answers with
CUDA_SUCCESS and plausible values. This checks how the driver calls the binding; it cannot check
what the driver does with a GPU.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

cu = pytest.importorskip("cuda.bindings.driver", reason="cuda-bindings is not installed")

from hlort_cuda.driver_bindings import CudaBindingsDriver  # noqa: E402

ANSWERS = {
    "cuDeviceGetCount": (2,),
    "cuDeviceGet": ("dev",),
    "cuDeviceGetName": (b"Fake H200\0\0",),
    "cuDeviceTotalMem": (1 << 30,),
    "cuDeviceGetAttribute": (9,),
    "cuDriverGetVersion": (12040,),
    "cuDeviceGetPCIBusId": (b"0000:01:00.0\0",),
    "cuDevicePrimaryCtxRetain": ("ctx",),
    "cuMemAlloc": (0x7F0000000000,),
    "cuMemGetInfo": (100, 200),
    "cuStreamCreate": ("stream",),
    "cuEventCreate": ("event",),
    "cuEventElapsedTime": (1.5,),
    "cuModuleLoadData": ("module",),
    "cuModuleGetFunction": ("function",),
    "cuDeviceCanAccessPeer": (1,),
}


class Binding:
    """Calls are checked against the real ``cuda.bindings.driver`` and recorded."""

    CUresult = cu.CUresult
    CUdevice_attribute = cu.CUdevice_attribute
    CUstream_flags = cu.CUstream_flags
    CUevent_flags = cu.CUevent_flags

    def __init__(self):
        self.calls: list[tuple] = []

    def __getattr__(self, name):
        real = getattr(cu, name)

        def call(*args):
            inspect.signature(real).bind(*args)
            self.calls.append((name, *args))
            return (cu.CUresult.CUDA_SUCCESS, *ANSWERS.get(name, ()))

        return call


def test_every_driver_call_matches_the_bindings_signature():
    binding = Binding()
    driver = CudaBindingsDriver(binding)
    assert driver.device_count() == 2 and driver.version() == "CUDA driver 12.4"
    props = driver.properties(0)
    assert props.arch == "sm_99" and props.name == "Fake H200" and props.total_memory == 1 << 30
    pointer = driver.mem_alloc(0, 4096)
    assert driver.mem_info(0) == (100, 200)
    stream = driver.stream_create(0)
    event = driver.event_create(0, timing=True)
    host = np.zeros(16, np.float32)
    driver.copy_h2d_async(pointer, host, stream)
    driver.copy_d2h_async(host, pointer, stream)
    driver.copy_d2d_async(pointer, pointer + 256, 64, stream)
    driver.copy_peer_async(pointer, 1, pointer, 0, 64, stream)
    driver.memset_async(pointer, 0, 64, stream)
    driver.stream_wait_event(stream, event)
    driver.event_record(event, stream)
    assert driver.event_query(event)
    driver.event_synchronize(event)
    assert driver.event_elapsed_ms(event, event) == 1.5
    module = driver.module_load(0, b".version 7.8\n.target sm_90\n")
    function = driver.function(module, "k0")
    driver.launch(function, (4, 1, 1), (256, 1, 1), 0, stream, [pointer, np.int32(7)])
    driver.stream_synchronize(stream)
    driver.event_destroy(event)
    driver.module_unload(module)
    driver.stream_destroy(stream)
    driver.mem_free(0, pointer)
    driver.close()
    names = [c[0] for c in binding.calls]
    assert names[0] == "cuInit" and "cuLaunchKernel" in names and "cuCtxEnablePeerAccess" in names
    load = next(c for c in binding.calls if c[0] == "cuModuleLoadData")
    assert load[1].endswith(b"\0")  # PTX goes to the driver NUL-terminated


def test_a_failed_call_becomes_an_hlort_error_with_the_drivers_name():
    from hlort.errors import ErrorCode, HlortError

    class Failing(Binding):
        def __getattr__(self, name):
            if name == "cuMemAlloc":
                return lambda n: (cu.CUresult.CUDA_ERROR_OUT_OF_MEMORY, None)
            if name == "cuGetErrorName":
                return lambda err: (cu.CUresult.CUDA_SUCCESS, b"CUDA_ERROR_OUT_OF_MEMORY")
            return super().__getattr__(name)

    driver = CudaBindingsDriver(Failing())
    with pytest.raises(HlortError) as err:
        driver.mem_alloc(0, 1 << 40)
    assert err.value.code is ErrorCode.RESOURCE_EXHAUSTED
    assert "cuMemAlloc" in err.value.message and "CUDA_ERROR_OUT_OF_MEMORY" in err.value.message


def test_the_devices_context_is_made_current_again_after_another_client_changed_it():
    """Two clients (or cuBLAS, or another library) on one thread: a context remembered per
    thread would run the first client's device-0 allocation in device 1's context."""

    class Contexts(Binding):
        current = None

        def __getattr__(self, name):
            if name == "cuDevicePrimaryCtxRetain":
                return lambda dev: (cu.CUresult.CUDA_SUCCESS, 1000 + dev)
            if name == "cuDeviceGet":
                return lambda k: (cu.CUresult.CUDA_SUCCESS, k)
            if name == "cuCtxGetCurrent":
                return lambda: (cu.CUresult.CUDA_SUCCESS, self.current)
            if name == "cuCtxSetCurrent":

                def set_current(ctx):
                    self.current = ctx
                    return (cu.CUresult.CUDA_SUCCESS,)

                return set_current
            if name == "cuMemAlloc":
                return lambda n: (cu.CUresult.CUDA_SUCCESS, self.current)
            return super().__getattr__(name)

    binding = Contexts()
    first, second = CudaBindingsDriver(binding), CudaBindingsDriver(binding)
    assert first.mem_alloc(0, 256) == 1000
    assert second.mem_alloc(1, 256) == 1001
    assert first.mem_alloc(0, 256) == 1000
    sets = [c for c in binding.calls if c[0] == "cuCtxSetCurrent"]
    assert first.mem_alloc(0, 256) == 1000
    assert [c for c in binding.calls if c[0] == "cuCtxSetCurrent"] == sets  # current: no call
