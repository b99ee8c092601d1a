"""Asynchronous execution: ``exe(buffers)`` returns before the work is done, on every backend
built on the plugin base (cpu, interpreter, tpusim, template). A *gate* (a job that waits on a
threading.Event, enqueued on the device's work queue) keeps the device busy, so "not ready yet"
is certain, not a race; after the gate opens every result is checked against NumPy."""

from __future__ import annotations

import contextlib
import gc
import threading

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError, Internal
from hlort.plugin.base import SimpleDevice

STEP = """HloModule step

ENTRY main {
  x = f32[4] parameter(0)
  two = f32[] constant(2)
  t = f32[4] broadcast(two), dimensions={}
  m = f32[4] multiply(x, t)
  one = f32[] constant(1)
  o = f32[4] broadcast(one), dimensions={}
  ROOT r = f32[4] add(m, o)
}
"""

PAIR = """HloModule pair

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  s = f32[4] add(x, y)
  p = f32[4] multiply(x, y)
  ROOT t = (f32[4], f32[4]) tuple(s, p)
}
"""

PLATFORMS = [p for p in ("cpu", "interpreter", "tpusim", "template") if p in hlort.backends()]


def step(x):
    return x * 2 + 1


@contextlib.contextmanager
def busy(device):
    """The device's queue runs a job that waits until the block exits."""
    raw = device.raw
    assert isinstance(raw, SimpleDevice), f"{device} is not a plugin-base device"
    gate = threading.Event()
    blocker = raw.queue.enqueue(lambda: gate.wait(60), "test gate")
    try:
        yield
    finally:
        gate.set()
        blocker.wait(60)


@pytest.fixture(params=PLATFORMS)
def platform(request):
    return request.param


def put(platform, values):
    return hlort.device_put(np.asarray(values, np.float32), f"{platform}:0")


def test_outputs_are_pending_while_the_device_is_busy_and_right_after_block(platform):
    exe = hlort.compile(STEP, f"{platform}:0")
    x = np.arange(4, dtype=np.float32)
    buf = put(platform, x)
    buf.block_until_ready()
    with busy(exe.device):
        out = exe(buf)
        assert not out.is_ready()
    assert out.block_until_ready() is out and out.is_ready()
    np.testing.assert_array_equal(np.asarray(out), step(x))


def test_a_slow_program_returns_before_it_finishes():
    """The program itself is slow (its launch waits on a gate): exe returns at once."""
    exe = hlort.compile(STEP, "cpu:0")
    gate = threading.Event()
    program = exe.raw.program
    real_run = program.run

    def slow_run(*args, **kwargs):
        assert gate.wait(60)
        return real_run(*args, **kwargs)

    program.run = slow_run
    try:
        buf = put("cpu", [1, 2, 3, 4])
        buf.block_until_ready()
        exe.raw._inline = False  # as for any program above the inline size
        out = exe(buf)
        assert not out.is_ready()
        assert threading.current_thread() is threading.main_thread()
        gate.set()
        np.testing.assert_array_equal(np.asarray(out.block_until_ready()), [3, 5, 7, 9])
    finally:
        gate.set()
        program.run = real_run
        exe.raw._inline = exe.raw.runs_inline()


def test_a_tiny_program_on_an_idle_cpu_runs_inline_and_bigger_ones_do_not():
    """Cheap straight-line programs run on the caller's thread (no queue hop: the dispatch cost
    of exe(x) on f32[4] stays as it was); loops and large programs never do."""
    tiny = hlort.compile(STEP, "cpu:0")
    assert tiny.raw.runs_inline()
    buf = put("cpu", [1, 2, 3, 4])
    out = tiny(buf)
    assert out.is_ready()
    np.testing.assert_array_equal(np.asarray(out), [3, 5, 7, 9])
    big = hlort.compile(STEP.replace("[4]", "[65536]"), "cpu:0")
    assert not big.raw.runs_inline()
    with busy(tiny.device):  # and even a tiny one waits its turn behind queued work
        out = tiny(buf)
        assert not out.is_ready()
    np.testing.assert_array_equal(np.asarray(out), [3, 5, 7, 9])


def test_a_failing_launch_raises_at_block_not_at_execute(platform, monkeypatch):
    exe = hlort.compile(STEP, f"{platform}:0")

    def broken(device, arguments, ctx):
        raise Internal("the kernel faulted (test)")

    monkeypatch.setattr(exe.raw, "launch", broken)
    monkeypatch.setattr(exe.raw, "_inline", False)
    buf = put(platform, [1, 2, 3, 4])
    with busy(exe.device):
        out = exe(buf)  # no error yet: the work has not run
    with pytest.raises(HlortError, match="the kernel faulted") as info:
        out.block_until_ready()
    assert info.value.code is ErrorCode.INTERNAL
    assert out.raw.ready_event().error() is info.value
    with pytest.raises(HlortError, match="the kernel faulted"):
        np.asarray(out)
    np.testing.assert_array_equal(np.asarray(buf), [1, 2, 3, 4])  # the input is untouched


def test_donation_kills_the_argument_at_once_and_the_result_is_right(platform):
    exe = hlort.compile(STEP, f"{platform}:0", options={"donated_arguments": [0]})
    buf = put(platform, [1, 2, 3, 4])
    buf.block_until_ready()
    with busy(exe.device):
        out = exe(buf)
        assert buf.is_deleted() and not out.is_ready()
        with pytest.raises(HlortError) as info:
            exe(buf)
        assert info.value.code is ErrorCode.FAILED_PRECONDITION
    np.testing.assert_array_equal(np.asarray(out), [3, 5, 7, 9])


ADD = """HloModule add

ENTRY main {
  x = f32[4] parameter(0)
  y = f32[4] parameter(1)
  ROOT s = f32[4] add(x, y)
}
"""


@pytest.mark.parametrize("donated", [0, 1])
def test_a_donated_buffer_passed_twice_in_one_call_is_refused_not_a_hang(platform, donated):
    # before: donating argument 1 waited forever for the hold argument 0 took on the same buffer
    exe = hlort.compile(ADD, f"{platform}:0", options={"donated_arguments": [donated]})
    buf = put(platform, [1, 2, 3, 4])
    with pytest.raises(HlortError, match="is donated, but the same buffer") as info:
        exe(buf, buf)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert not buf.is_deleted()
    np.testing.assert_array_equal(np.asarray(buf), [1, 2, 3, 4])


def test_deleting_an_input_while_its_execution_is_queued_is_safe(platform):
    exe = hlort.compile(STEP, f"{platform}:0")
    buf = put(platform, [1, 2, 3, 4])
    with busy(exe.device):
        out = exe(buf)
        buf.delete()
        assert buf.is_deleted()
    np.testing.assert_array_equal(np.asarray(out), [3, 5, 7, 9])


def test_dependent_executions_run_in_order(platform):
    exe = hlort.compile(STEP, f"{platform}:0")
    x = np.array([0, 1, -1, 0.5], np.float32)
    buf = put(platform, x)
    with busy(exe.device):
        chain = [buf]
        for _ in range(5):
            chain.append(exe(chain[-1]))
        for middle in chain[1:-1]:
            middle.delete()  # the next step holds it until it has read it
        assert not chain[-1].is_ready()
    want = x
    for _ in range(5):
        want = step(want)
    np.testing.assert_array_equal(np.asarray(chain[-1]), want)


def test_block_until_ready_takes_results_and_nests_of_them(platform):
    exe = hlort.compile(PAIR, f"{platform}:0")
    x, y = put(platform, [1, 2, 3, 4]), put(platform, [4, 3, 2, 1])
    with busy(exe.device):
        result = exe(x, y)
        assert isinstance(result, tuple) and not any(b.is_ready() for b in result)
    nest = {"r": result, "more": [x, (y,)]}
    assert hlort.block_until_ready(nest) is nest
    assert all(b.is_ready() for b in result)
    np.testing.assert_array_equal(np.asarray(result[0]), [5, 5, 5, 5])
    np.testing.assert_array_equal(np.asarray(result[1]), [4, 6, 6, 4])


def test_block_until_ready_raises_the_first_error_in_a_nest(monkeypatch):
    exe = hlort.compile(PAIR, "interpreter:0")

    def broken(device, arguments, ctx):
        raise Internal("launch failed (test)")

    monkeypatch.setattr(exe.raw, "launch", broken)
    x = put("interpreter", [1, 2, 3, 4])
    with pytest.raises(HlortError, match="launch failed"):
        hlort.block_until_ready([x, exe(x, x)])


# -- host views: __array__(copy=False) and __dlpack__ ----------------------------------------


@pytest.mark.parametrize("host_platform", [p for p in PLATFORMS if p in ("cpu", "interpreter")])
def test_host_visible_buffers_lend_their_memory_read_only(host_platform):
    exe = hlort.compile(STEP, f"{host_platform}:0")
    out = exe(put(host_platform, [1, 2, 3, 4]))
    assert out.host_visible()
    storage = out.raw.storage_now()
    for view in (np.from_dlpack(out), np.asarray(out, copy=False)):
        assert np.shares_memory(view, storage) and not view.flags.writeable
        np.testing.assert_array_equal(view, [3, 5, 7, 9])
    assert out.__dlpack_device__() == (1, 0)
    copy = np.asarray(out)  # the default still copies
    assert not np.shares_memory(copy, storage) and copy.flags.writeable


def test_a_buffer_with_a_live_view_cannot_be_donated_and_outlives_delete():
    exe = hlort.compile(STEP, "cpu:0", options={"donated_arguments": [0]})
    buf = put("cpu", [1, 2, 3, 4])
    view = np.from_dlpack(buf)
    with pytest.raises(HlortError, match="host view") as info:
        exe(buf)
    assert info.value.code is ErrorCode.FAILED_PRECONDITION and not buf.is_deleted()
    del view
    gc.collect()
    np.testing.assert_array_equal(np.asarray(exe(buf)), [3, 5, 7, 9])  # donation works again
    other = put("cpu", [5, 6, 7, 8])
    view = np.asarray(other, copy=False)
    other.delete()
    np.testing.assert_array_equal(view, [5, 6, 7, 8])  # the memory lives while the view does


def test_device_memory_is_not_lent():
    buf = put("tpusim", [1, 2, 3, 4]) if "tpusim" in PLATFORMS else None
    if buf is None:
        pytest.skip("tpusim (a backend with device memory) is not installed")
    assert not buf.host_visible()
    with pytest.raises(BufferError, match="not in host-visible memory"):
        np.from_dlpack(buf)
    with pytest.raises(ValueError, match="cannot be read without a copy"):
        np.asarray(buf, copy=False)
    np.testing.assert_array_equal(np.asarray(buf), [1, 2, 3, 4])
