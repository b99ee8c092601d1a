"""Executions that consume each other's outputs, queued without waiting: each must see its
producer's finished result (execution is asynchronous: ``execute`` may return before the work
is done), even when every intermediate buffer is deleted, or donated, as soon as it has been
passed on."""

from __future__ import annotations

import numpy as np

from hlort.plugin.options import CompileOptions
from hlort.testing.programs import axpy, axpy_reference, slow_loop

STEPS = 8


def _delete(*buffers) -> None:
    """Free what a test made before it ends (the memory-statistics tests count live bytes)."""
    for buf in buffers:
        if not buf.is_deleted():
            buf.delete()


def _expected(a: np.float32, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    for _ in range(STEPS):
        x = axpy_reference(a, x, y)
    return x


def test_a_chain_of_executions_with_intermediates_deleted(hlort_session) -> None:
    exe = hlort_session.compile(axpy(16))
    a, x, y = np.float32(0.5), np.linspace(-2, 2, 16, dtype=np.float32), np.ones(16, np.float32)
    a_buf, x_buf, y_buf = hlort_session.put([a, x, y])
    current = x_buf
    for _ in range(STEPS):
        (following,) = exe.execute([[a_buf, current, y_buf]])[0]
        current.delete()  # the execution just queued holds it until it has read it
        current = following
    (got,) = hlort_session.fetch([current])
    _delete(a_buf, y_buf, current)
    np.testing.assert_allclose(got, _expected(a, x, y), rtol=1e-6)


def test_a_chain_of_executions_donating_each_intermediate(hlort_session, hlort_require) -> None:
    hlort_require("donation")
    exe = hlort_session.compile(axpy(16), options=CompileOptions(donated_arguments=(1,)))
    a, x, y = np.float32(-1.5), np.linspace(0, 1, 16, dtype=np.float32), np.full(16, 2, np.float32)
    a_buf, current, y_buf = hlort_session.put([a, x, y])
    for _ in range(STEPS):
        (current,) = exe.execute([[a_buf, current, y_buf]])[0]
    (got,) = hlort_session.fetch([current])
    _delete(a_buf, y_buf, current)
    np.testing.assert_allclose(got, _expected(a, x, y), rtol=1e-6)


def test_a_slow_producer_and_a_fast_consumer(hlort_session) -> None:
    """The consumer of a slow program's output is queued at once and still reads it done."""
    slow = hlort_session.compile(slow_loop(2000))
    fast = hlort_session.compile(axpy(64))
    x = np.arange(64, dtype=np.float32)
    a_buf, x_buf, y_buf = hlort_session.put([np.float32(2), x, np.ones(64, np.float32)])
    (produced,) = slow.execute([[x_buf]])[0]
    (consumed,) = fast.execute([[a_buf, produced, y_buf]])[0]
    produced.delete()
    (got,) = hlort_session.fetch([consumed])
    _delete(a_buf, x_buf, y_buf, consumed)
    np.testing.assert_array_equal(got, (x + 2000) * 2 + 1)
