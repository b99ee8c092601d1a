"""The top-level API: devices, backends, default_backend, backend, backend_errors, device_put."""

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.api import ProbeResult
from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.plugin.registry import default_registry


def test_public_names_exist():
    for name in (
        "devices",
        "backends",
        "default_backend",
        "backend",
        "backend_errors",
        "device_put",
        "compile",
        "CompileOptions",
    ):
        assert hasattr(hlort, name), name


def test_interpreter_is_always_there():
    assert "interpreter" in hlort.backends()
    devices = hlort.devices("interpreter")
    # HLORT_INTERPRETER_DEVICES or 8 (multi-device programs run on the interpreter too)
    from hlort.plugin.interpreter_backend import default_device_count

    count = default_device_count()
    assert [str(d) for d in devices] == [f"interpreter:{i}" for i in range(count)]
    assert devices[0] == hlort.devices("interpreter")[0]  # stable wrappers
    assert hlort.backend("interpreter") is hlort.backend("interpreter")
    assert hlort.backend("interpreter").platform == "interpreter"


def test_default_backend_follows_priority_and_hlort_platforms(monkeypatch):
    class Better(InterpreterPlugin):
        name, priority = "better", 5

    default_registry().register(Better())
    assert hlort.default_backend().platform == "better"
    assert list(hlort.backends()) == ["better", "interpreter"]
    monkeypatch.setenv("HLORT_PLATFORMS", "interpreter")
    assert hlort.default_backend().platform == "interpreter"
    assert list(hlort.backends()) == ["interpreter"]


def test_backend_errors_reports_unavailable_plugins():
    class Absent(InterpreterPlugin):
        name = "absent"

        def probe(self):
            return ProbeResult.unavailable("no such hardware", "buy some")

    default_registry().register(Absent())
    assert hlort.backend_errors() == {"absent": "no such hardware; fix: buy some"}
    with pytest.raises(HlortError) as info:
        hlort.backend("absent")
    assert info.value.code is ErrorCode.UNAVAILABLE


def test_device_put_and_back():
    buf = hlort.device_put(np.arange(6, dtype=np.int16).reshape(2, 3), "interpreter:0")
    assert buf.shape == (2, 3) and buf.dtype == np.int16 and buf.nbytes == 12
    np.testing.assert_array_equal(buf.numpy(), np.arange(6).reshape(2, 3))
    again = hlort.device_put(buf, "interpreter")
    np.testing.assert_array_equal(np.asarray(again), buf.numpy())
    buf.delete()
    assert buf.is_deleted()
    with pytest.raises(HlortError) as info:
        buf.numpy()
    assert info.value.code is ErrorCode.FAILED_PRECONDITION


@pytest.mark.parametrize(
    "spec, code",
    [
        ("nosuch:0", ErrorCode.NOT_FOUND),
        ("interpreter:99", ErrorCode.NOT_FOUND),
        ("interpreter:x", ErrorCode.INVALID_ARGUMENT),
    ],
)
def test_bad_device_specs(spec, code):
    with pytest.raises(HlortError) as info:
        hlort.device_put(np.zeros(1), spec)
    assert info.value.code is code
