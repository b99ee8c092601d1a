"""cuBLAS handles belong to one client: bound to its devices' streams, destroyed when it closes.

A handle cached per device *number* for the whole process would send a later client's gemms to
the stream of a client already closed (destroyed), outside the stream order its kernels run in.
The library here is a stand-in recording the calls the runner makes.
"""

from __future__ import annotations

import ctypes

import pytest
from fake_gpu_client import FakeGpuClient

import hlort_cuda.cublas as cublas
from hlort.codegen.gpu.program import GemmSpec, LibraryCall
from hlort_cuda.client import CudaClient

_GEMM = LibraryCall("gemm", (0, 1, 2), GemmSpec(1, 1, 1, 1, "f32", "f32", "f32"), "dot")


class RecordingCublas:
    """cublasCreate/SetStream/Destroy as Python functions: (call, handle, stream) tuples."""

    def __init__(self):
        self.calls: list[tuple] = []
        self._next = 100

        def create(ref):
            self._next += 1
            ctypes.cast(ctypes.addressof(ref._obj), ctypes.POINTER(ctypes.c_void_p))[0] = self._next
            self.calls.append(("create", self._next, None))
            return 0

        def set_stream(handle, stream):
            self.calls.append(("set_stream", handle.value, stream.value))
            return 0

        def destroy(handle):
            self.calls.append(("destroy", handle.value, None))
            return 0

        self.cublasCreate_v2 = create
        self.cublasSetStream_v2 = set_stream
        self.cublasDestroy_v2 = destroy
        self.cublasGemmEx = lambda *args: 0
        self.cublasGemmStridedBatchedEx = lambda *args: 0


class Client(FakeGpuClient):
    library_runner = CudaClient.library_runner
    close_library_runners = CudaClient.close_library_runners


@pytest.fixture
def library(monkeypatch):
    lib = RecordingCublas()
    monkeypatch.setattr(cublas, "_load_library", lambda: (lib, "fake-libcublas"))
    return lib


def _program():
    from types import SimpleNamespace

    return SimpleNamespace(steps=[_GEMM])


def _handle_of(client: Client) -> int:
    device = client.devices()[0]
    device.driver.native_stream = lambda stream: id(stream)
    return client.library_runner(_program()).handle(device).value


def test_each_client_binds_its_own_handle_to_its_own_stream(library):
    first = Client(None, {})
    first_handle = _handle_of(first)
    first_stream = id(first.devices()[0].stream)
    first.close()
    second = Client(None, {})
    try:
        second_handle = _handle_of(second)
        second_stream = id(second.devices()[0].stream)
        assert second.library_runner(_program()) is second.library_runner(_program())
    finally:
        second.close()
    assert second_handle != first_handle
    assert ("set_stream", first_handle, first_stream) in library.calls
    assert ("set_stream", second_handle, second_stream) in library.calls


def test_close_destroys_the_handles_after_the_queues_drain_and_before_the_streams_go(library):
    client = Client(None, {})
    handle = _handle_of(client)
    device = client.devices()[0]
    seen = {}
    destroyed_streams = []
    destroy_stream = device.driver.stream_destroy
    destroy = library.cublasDestroy_v2

    def checked_destroy(h):
        seen["queue_closed"] = device.queue.closed
        seen["stream_alive"] = device.stream not in destroyed_streams
        return destroy(h)

    def recorded_stream_destroy(stream):
        destroyed_streams.append(stream)
        destroy_stream(stream)

    library.cublasDestroy_v2 = checked_destroy
    device.driver.stream_destroy = recorded_stream_destroy
    client.close()
    assert ("destroy", handle, None) in library.calls
    assert seen == {"queue_closed": True, "stream_alive": True}
    assert destroyed_streams == [device.stream]
    client.close()  # idempotent: no second destroy
    assert [c for c in library.calls if c[0] == "destroy"] == [("destroy", handle, None)]
