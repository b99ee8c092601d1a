"""Ready events and callbacks: once ready, always ready; callbacks run exactly once, with the
error of a failed execution, which waiters and ``to_host`` also see."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.testing.programs import failing_at_run_time, side_effect_in_unused_loop, slow_loop
from hlort.testing.session import TIMEOUT_S


def _callback_log():
    calls: list[HlortError | None] = []
    done = threading.Event()

    def callback(error: HlortError | None) -> None:
        calls.append(error)
        done.set()

    return calls, done, callback


def test_transfer_event_becomes_ready(hlort_session) -> None:
    buf = hlort_session.put([np.ones((3, 4), np.float32)])[0]
    event = buf.ready_event()
    event.wait(TIMEOUT_S)
    assert event.is_ready() and event.error() is None
    calls, done, callback = _callback_log()
    event.on_ready(callback)  # already ready: called at once
    assert done.wait(TIMEOUT_S) and calls == [None]
    event.wait(0)  # a ready event never blocks
    buf.delete()


def test_callbacks_run_once_for_pending_work(hlort_session) -> None:
    exe = hlort_session.compile(slow_loop(3000))
    (arg,) = hlort_session.put([np.zeros(64, np.float32)])
    (out,) = exe.execute([[arg]])[0]
    logs = [_callback_log() for _ in range(3)]
    for _, _, callback in logs:
        out.ready_event().on_ready(callback)
    for _, done, _ in logs:
        assert done.wait(TIMEOUT_S), "on_ready callback never ran"
    out.ready_event().wait(TIMEOUT_S)
    assert [calls for calls, _, _ in logs] == [[None]] * 3, "each callback must run exactly once"
    future = out.to_host()
    np.testing.assert_array_equal(future.result(TIMEOUT_S), 3000)
    assert future.is_ready() and future.error() is None


def test_failed_execution_fails_its_outputs_events(hlort_session, hlort_require) -> None:
    hlort_require("runtime_errors")
    try:
        exe = hlort_session.compile(failing_at_run_time())
    except HlortError as err:
        if err.code is ErrorCode.UNIMPLEMENTED:
            pytest.skip(
                f"cannot test run-time failures: check.expect_eq is unsupported ({err.message})"
            )
        raise
    args = hlort_session.put([np.zeros(3, np.float32)])
    try:
        outputs = exe.execute([args])[0]
    except HlortError:
        pytest.fail(
            "execute must return at once; a failure while running belongs in the outputs' events"
        )
    calls, done, callback = _callback_log()
    event = outputs[0].ready_event()
    event.on_ready(callback)
    assert done.wait(TIMEOUT_S), "on_ready callback never ran for a failed execution"
    assert event.is_ready()
    error = event.error()
    assert isinstance(error, HlortError), (
        f"a failed execution's event must carry the error, got {error!r}"
    )
    assert calls == [error] or (len(calls) == 1 and isinstance(calls[0], HlortError))
    with pytest.raises(HlortError):
        event.wait(TIMEOUT_S)
    with pytest.raises(HlortError):
        outputs[0].to_host().result(TIMEOUT_S)
    for buf in [*args, *outputs]:
        buf.delete()


def test_good_work_after_a_failure_still_runs(hlort_session, hlort_require) -> None:
    hlort_require("runtime_errors")
    try:
        bad = hlort_session.compile(failing_at_run_time())
    except HlortError as err:
        pytest.skip(f"check.expect_eq is unsupported ({err.message})")
    args = hlort_session.put([np.zeros(3, np.float32)])
    for out in bad.execute([args])[0]:
        with pytest.raises(HlortError):
            out.ready_event().wait(TIMEOUT_S)
    good = hlort_session.put([np.array([1.0, 2.0, 3.0], np.float32)])
    (first,) = hlort_session.fetch(bad.execute([good])[0])
    np.testing.assert_array_equal(first, [2.0, 4.0, 6.0])


def test_a_side_effect_inside_an_unused_loop_runs(hlort_session, hlort_require) -> None:
    """A while loop nothing uses, whose body has a side effect (a check that fails on zeros),
    survives DCE; the backend must run it too, so its failure reaches the outputs' events."""
    hlort_require("runtime_errors")
    try:
        exe = hlort_session.compile(side_effect_in_unused_loop())
    except HlortError as err:
        if err.code is ErrorCode.UNIMPLEMENTED:
            pytest.skip(f"check.expect_eq inside a while body is unsupported ({err.message})")
        raise
    good = hlort_session.put([np.array([1.0, 2.0, 3.0], np.float32)])
    (result,) = hlort_session.fetch(exe.execute([good])[0])
    np.testing.assert_array_equal(result, [2.0, 4.0, 6.0])
    bad = hlort_session.put([np.zeros(3, np.float32)])
    outputs = exe.execute([bad])[0]
    for out in outputs:
        with pytest.raises(HlortError):
            out.ready_event().wait(TIMEOUT_S)
    for buf in [*good, *bad, *outputs]:
        buf.delete()
