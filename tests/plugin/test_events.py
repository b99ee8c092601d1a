"""AsyncValue: completes once, errors reach waiters and callbacks, timeouts are reported."""

import logging
import threading
import time

import pytest

from hlort.errors import ErrorCode, HlortError, InvalidArgument
from hlort.plugin.base import AsyncValue, all_ready, failed_value, ready_value


def test_result_set_from_another_thread_wakes_the_waiter():
    value = AsyncValue("v")
    threading.Timer(0.02, value.set_result, args=(42,)).start()
    assert not value.is_ready()
    assert value.result(timeout=5) == 42
    assert value.is_ready() and value.error() is None


def test_error_is_raised_to_every_waiter():
    value = AsyncValue("v")
    value.set_error(InvalidArgument("bad thing"))
    for _ in range(2):
        with pytest.raises(InvalidArgument, match="bad thing"):
            value.wait()
    assert value.error().code is ErrorCode.INVALID_ARGUMENT


def test_foreign_exceptions_become_internal_errors_naming_the_type():
    value = AsyncValue("launch")
    value.set_error(ZeroDivisionError("oops"))
    with pytest.raises(HlortError) as info:
        value.result()
    assert info.value.code is ErrorCode.INTERNAL
    assert "ZeroDivisionError" in info.value.message and "launch" in info.value.message


def test_on_ready_before_and_after_completion():
    value = AsyncValue()
    seen = []
    value.on_ready(lambda err: seen.append(("early", err)))
    assert seen == []
    value.set_result(1)
    value.on_ready(lambda err: seen.append(("late", err)))
    assert seen == [("early", None), ("late", None)]


def test_callbacks_receive_the_error():
    value = AsyncValue()
    seen = []
    value.on_ready(seen.append)
    value.set_error(InvalidArgument("x"))
    assert isinstance(seen[0], InvalidArgument)


def test_a_raising_callback_does_not_break_completion(capsys, caplog):
    value = AsyncValue()
    value.on_ready(lambda err: 1 / 0)
    seen = []
    value.on_ready(seen.append)
    with caplog.at_level(logging.ERROR, logger="hlort.events"):
        value.set_result(None)
    assert seen == [None]
    records = [r for r in caplog.records if r.name == "hlort.events"]
    assert len(records) == 1 and "callback raised" in records[0].getMessage()
    assert records[0].exc_info[0] is ZeroDivisionError  # the traceback goes with it
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "", "library code prints nothing itself"


def test_completing_twice_is_a_bug():
    value = ready_value(1)
    with pytest.raises(HlortError, match="completed twice"):
        value.set_result(2)


def test_wait_timeout_is_deadline_exceeded():
    start = time.perf_counter()
    with pytest.raises(HlortError) as info:
        AsyncValue("slow thing").wait(timeout=0.05)
    assert info.value.code is ErrorCode.DEADLINE_EXCEEDED
    assert "slow thing" in info.value.message
    assert time.perf_counter() - start < 2


def test_all_ready_waits_for_every_event_and_keeps_the_first_error():
    a, b = AsyncValue(), AsyncValue()
    joined = all_ready([a, b])
    a.set_result(None)
    assert not joined.is_ready()
    b.set_error(InvalidArgument("b failed"))
    with pytest.raises(InvalidArgument, match="b failed"):
        joined.wait()
    assert all_ready([]).is_ready()
    assert all_ready([ready_value(), ready_value()]).error() is None
    assert all_ready([failed_value(InvalidArgument("e"))]).error() is not None
