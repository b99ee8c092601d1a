"""delete / is_deleted, use after delete, donation, and deleting buffers that work still reads.

Every use of a dead buffer must raise FAILED_PRECONDITION whose message names the buffer
(``Buffer.name``), either at once or through the ready event of what the use produced.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import CompileOptions, ExecuteOptions
from hlort.testing.programs import axpy, axpy_reference, slow_loop
from hlort.testing.session import TIMEOUT_S


def _inputs(n: int = 8):
    x = np.linspace(-1, 1, n, dtype=np.float32)
    return [np.float32(2.5), x, x[::-1].copy()]


def _expect_dead(action, buf, what: str) -> None:
    """``action()`` must fail with FAILED_PRECONDITION naming ``buf``, now or via its result."""
    try:
        result = action()
        events = result if isinstance(result, list) else [result]
        for event in events:
            event = event.ready_event() if hasattr(event, "ready_event") else event
            event.wait(TIMEOUT_S)
    except HlortError as err:
        assert err.code is ErrorCode.FAILED_PRECONDITION, (
            f"{what}: expected FAILED_PRECONDITION, got {err.code.name}: {err.message}"
        )
        assert buf.name in err.message, (
            f"{what}: the error must name the buffer ({buf.name!r}), got: {err.message}"
        )
        return
    pytest.fail(f"{what} succeeded; it must raise FAILED_PRECONDITION naming {buf.name!r}")


def test_delete_is_idempotent_and_observable(hlort_session) -> None:
    buf = hlort_session.put([np.arange(6, dtype=np.int32)])[0]
    assert buf.is_deleted() is False
    buf.delete()
    assert buf.is_deleted() is True
    buf.delete()
    assert buf.is_deleted() is True


def test_use_after_delete_is_failed_precondition(hlort_session) -> None:
    exe = hlort_session.compile(axpy())
    args = hlort_session.put(_inputs())
    args[1].delete()
    _expect_dead(lambda: args[1].to_host(), args[1], "to_host after delete")
    _expect_dead(lambda: exe.execute([args])[0], args[1], "execute with a deleted argument")
    device = hlort_session.device
    _expect_dead(lambda: args[1].copy_to_device(device), args[1], "copy_to_device after delete")
    for buf in args:
        buf.delete()


def test_deleting_an_argument_of_pending_work_is_safe(hlort_session) -> None:
    exe = hlort_session.compile(slow_loop(500))
    x = np.arange(64, dtype=np.float32)
    (arg,) = hlort_session.put([x])
    outputs = exe.execute([[arg]])[0]
    arg.delete()  # the launch already holds it: it must still read the data
    np.testing.assert_array_equal(hlort_session.fetch(outputs)[0], x + 500)


def test_donated_argument_is_consumed(hlort_session, hlort_require) -> None:
    hlort_require("donation")
    exe = hlort_session.compile(axpy(), options=CompileOptions(donated_arguments=(1,)))
    assert tuple(exe.donated_argument_indices()) == (1,)
    inputs = _inputs()
    args = hlort_session.put(inputs)
    outputs = exe.execute([args])[0]
    assert args[1].is_deleted(), "a donated argument must read as deleted after execute"
    assert not args[0].is_deleted() and not args[2].is_deleted()
    np.testing.assert_allclose(hlort_session.fetch(outputs)[0], axpy_reference(*inputs), rtol=1e-6)
    _expect_dead(lambda: args[1].to_host(), args[1], "to_host of a donated buffer")
    _expect_dead(lambda: exe.execute([args])[0], args[1], "execute with a donated buffer")
    np.testing.assert_array_equal(hlort_session.fetch([args[2]])[0], inputs[2])


def test_non_donatable_inputs_survive(hlort_session, hlort_require) -> None:
    hlort_require("donation")
    exe = hlort_session.compile(axpy(), options=CompileOptions(donated_arguments=(1,)))
    inputs = _inputs()
    args = hlort_session.put(inputs)
    options = ExecuteOptions(non_donatable_input_indices=frozenset({1}))
    outputs = exe.execute([args], options)[0]
    hlort_session.fetch(outputs)
    assert not args[1].is_deleted()
    np.testing.assert_array_equal(hlort_session.fetch([args[1]])[0], inputs[1])


def test_outputs_can_be_deleted_before_they_are_ready(hlort_session) -> None:
    exe = hlort_session.compile(slow_loop(300))
    (arg,) = hlort_session.put([np.zeros(64, np.float32)])
    for _ in range(3):
        for out in exe.execute([[arg]])[0]:
            out.delete()
    np.testing.assert_array_equal(hlort_session.fetch(exe.execute([[arg]])[0])[0], 300)
