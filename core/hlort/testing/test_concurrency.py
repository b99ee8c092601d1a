"""Eight threads at once: executing one executable, creating buffers, compiling; every result
must be right and nothing may deadlock."""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from hlort.testing.programs import axpy, axpy_reference
from hlort.testing.session import TIMEOUT_S

THREADS = 8
ROUNDS = 6


def _run_threads(work: Callable[[int], None]) -> None:
    barrier = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            barrier.wait(TIMEOUT_S)
            work(k)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=body, args=(k,), name=f"conformance-{k}") for k in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    hung = [t.name for t in threads if t.is_alive()]
    assert not hung, f"threads {hung} did not finish in {TIMEOUT_S} s (deadlock?)"
    if errors:
        raise AssertionError(
            f"{len(errors)} of {THREADS} threads failed; first: {errors[0]!r}"
        ) from errors[0]


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
