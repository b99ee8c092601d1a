"""Eight threads at once: executing one executable, creating buffers, compiling, dropping buffers
for the garbage collector; every result must be right, nothing may deadlock, and the device's
memory statistics must come back to where they were."""

from __future__ import annotations

import gc
from collections.abc import Callable

import numpy as np

from hlort.testing.finalizer_hazards import drop_in_cycle, finishes_within, in_threads
from hlort.testing.programs import axpy, axpy_reference
from hlort.testing.session import TIMEOUT_S

THREADS = 8
ROUNDS = 6


def _run_threads(work: Callable[[int], None]) -> None:
    """``work(k)`` in THREADS threads at once; a thread still running after TIMEOUT_S fails the
    test (a deadlock) without keeping the process from exiting."""
    finishes_within(TIMEOUT_S, lambda: in_threads(work, THREADS), f"{THREADS} threads")


def test_eight_threads_execute_one_executable(hlort_session, hlort_require) -> None:
    hlort_require("concurrent_execute")
    exe = hlort_session.compile(axpy(32))

    def work(k: int) -> None:
        for r in range(ROUNDS):
            x = np.full(32, k, np.float32) + np.arange(32, dtype=np.float32)
            inputs = [np.float32(r + 1), x, np.full(32, -k, np.float32)]
            (got,) = hlort_session.run(exe, inputs)
            np.testing.assert_allclose(
                got, axpy_reference(*inputs), rtol=1e-6, err_msg=f"thread {k} round {r}"
            )

    _run_threads(work)


def test_eight_threads_transfer_and_compile(hlort_session, hlort_require) -> None:
    hlort_require("concurrent_execute")

    def work(k: int) -> None:
        exe = hlort_session.compile(axpy(8 + k, name=f"axpy_{k}"))
        for r in range(ROUNDS):
            x = np.arange(8 + k, dtype=np.float32) * (r + 1)
            buf = hlort_session.client.buffer_from_host(x, hlort_session.device)
            np.testing.assert_array_equal(buf.to_host().result(TIMEOUT_S), x)
            buf.delete()
        inputs = [np.float32(k), np.ones(8 + k, np.float32), np.zeros(8 + k, np.float32)]
        np.testing.assert_allclose(hlort_session.run(exe, inputs)[0], axpy_reference(*inputs))

    _run_threads(work)


def test_threads_share_buffers(hlort_session, hlort_require) -> None:
    hlort_require("concurrent_execute")
    exe = hlort_session.compile(axpy(16))
    inputs = [np.float32(3), np.arange(16, dtype=np.float32), np.ones(16, np.float32)]
    shared = hlort_session.put(inputs)
    want = axpy_reference(*inputs)

    def work(k: int) -> None:
        for _ in range(ROUNDS):
            outputs = exe.execute([shared])[0]
            np.testing.assert_allclose(hlort_session.fetch(outputs)[0], want, rtol=1e-6)
            for out in outputs:
                out.delete()

    _run_threads(work)
    np.testing.assert_array_equal(hlort_session.fetch(shared)[1], inputs[1])
    for buf in shared:
        buf.delete()


def test_threads_dropping_buffers_in_cycles_give_their_memory_back(
    hlort_session, hlort_require
) -> None:
    """Buffers left to the garbage collector, which runs often here, in any thread: now and
    then inside the plugin's own allocate, free or memory_stats, where a finalizer that takes
    the plugin's lock deadlocks. A stress test, not a proof: a plugin's own tests force that
    moment with ``hlort.testing.finalizer_hazards.CollectingLock`` on its allocator's lock (the
    template's tests/test_finalizers.py). memory_stats is exact once every buffer is collected."""
    hlort_require("concurrent_execute")
    hlort_require("memory_stats")
    exe = hlort_session.compile(axpy(64))
    device = hlort_session.device
    gc.collect()
    before = device.memory_stats().bytes_in_use

    def work(k: int) -> None:
        for r in range(ROUNDS):
            inputs = [np.float32(k), np.full(64, r, np.float32), np.arange(64, dtype=np.float32)]
            args = hlort_session.put(inputs)
            outputs = exe.execute([args])[0]
            np.testing.assert_allclose(
                hlort_session.fetch(outputs)[0], axpy_reference(*inputs), rtol=1e-6
            )
            device.memory_stats()
            for buf in [*args, *outputs]:
                drop_in_cycle(buf)
            del args, outputs, buf

    thresholds = gc.get_threshold()
    gc.set_threshold(20)  # a collection every few allocations, in every thread
    try:
        _run_threads(work)
    finally:
        gc.set_threshold(*thresholds)
    gc.collect()
    after = device.memory_stats().bytes_in_use
    assert after == before, (
        f"bytes_in_use is {after} after every buffer of the threads was collected, "
        f"{before} before: the plugin lost track of {after - before} bytes"
    )
