"""The template's launch is asynchronous, as a GPU plugin's is: it returns an AsyncLaunch, the
device's work queue moves on while the compute stream runs, and the outputs become ready (or
fail) with the stream's completion event."""

import threading

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import HlortError, Internal
from hlort.plugin.base import AsyncLaunch, LaunchContext
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS, CompileOptions
from hlort_template import TemplatePlugin


@pytest.fixture
def client():
    c = TemplatePlugin().create_client({"device_count": 1, "arena_bytes": 1 << 20})
    yield c
    c.close()


def double():
    b = Builder("double")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.add(x, x))


def stall(device):
    """Block the compute stream until the returned event is set."""
    gate = threading.Event()
    device.stream.enqueue(lambda: gate.wait(60), "test stall")
    return gate


def test_launch_returns_an_async_launch_with_allocated_outputs(client):
    device = client.devices()[0]
    exe = client.compile(double(), CompileOptions())
    arg = client.buffer_from_host(np.ones(4, np.float32), device)
    gate = stall(device)
    try:
        ctx = LaunchContext(0, 0, 0, DEFAULT_EXECUTE_OPTIONS)
        launched = exe.launch(device, [arg.storage_now()], ctx)
        assert isinstance(launched, AsyncLaunch) and len(launched.outputs) == 1
        assert not launched.completion().is_ready()
    finally:
        gate.set()
    launched.completion().wait(60)
    np.testing.assert_array_equal(device.copy_out(launched.outputs[0], exe.output_shapes[0]), 2)
    device.free(launched.outputs[0])


def test_the_work_queue_moves_on_while_the_stream_computes(client):
    device = client.devices()[0]
    exe = client.compile(double(), CompileOptions())
    arg = client.buffer_from_host(np.arange(4, dtype=np.float32), device)
    gate = stall(device)
    try:
        (out,) = exe.execute([[arg]])[0]
        # the launch itself has returned: a transfer queued behind it completes meanwhile
        device.queue.synchronize(timeout=60)
        later = client.buffer_from_host(np.full(4, 7, np.float32), device)
        assert later.to_host().result(timeout=60).tolist() == [7, 7, 7, 7]
        assert not out.ready_event().is_ready()
    finally:
        gate.set()
    np.testing.assert_array_equal(out.to_host().result(timeout=60), [0, 2, 4, 6])


def test_a_stream_error_fails_the_outputs_and_frees_their_memory(client, monkeypatch):
    device = client.devices()[0]
    exe = client.compile(double(), CompileOptions())
    arg = client.buffer_from_host(np.ones(4, np.float32), device)
    arg.ready_event().wait(60)  # its block is allocated by the transfer, on the queue
    free_before = device.arena.bytes_free()

    def faulting(*args):
        raise Internal("the kernel faulted (test)")

    monkeypatch.setattr(exe, "_run_steps", faulting)
    (out,) = exe.execute([[arg]])[0]
    with pytest.raises(HlortError, match="the kernel faulted"):
        out.ready_event().wait(60)
    assert device.arena.bytes_free() == free_before  # the failed output's block went back
    np.testing.assert_array_equal(arg.to_host().result(timeout=60), 1)
