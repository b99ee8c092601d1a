"""serialize -> deserialize -> execute, and the errors for bytes that are not an executable."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.testing.programs import axpy, axpy_reference, two_outputs


@pytest.fixture
def serialized(hlort_session, hlort_require):
    hlort_require("serialization")
    exe = hlort_session.compile(axpy(16))
    return exe, exe.serialize()


def test_serialize_deserialize_execute(hlort_session, serialized) -> None:
    exe, blob = serialized
    assert isinstance(blob, bytes) and blob
    loaded = hlort_session.client.deserialize_executable(blob)
    assert loaded.name == exe.name
    assert list(loaded.parameter_shapes) == list(exe.parameter_shapes)
    assert list(loaded.output_shapes) == list(exe.output_shapes)
    x = np.linspace(-3, 3, 16, dtype=np.float32)
    inputs = [np.float32(-1.5), x, x * x]
    (got,) = hlort_session.run(loaded, inputs)
    np.testing.assert_allclose(got, axpy_reference(*inputs), rtol=1e-6)
    try:
        assert loaded.fingerprint() == exe.fingerprint(), "deserializing keeps the fingerprint"
    except HlortError as err:
        assert err.code is ErrorCode.UNIMPLEMENTED


def test_tuple_results_survive_serialization(hlort_session, hlort_require) -> None:
    hlort_require("serialization")
    blob = hlort_session.compile(two_outputs(3)).serialize()
    loaded = hlort_session.client.deserialize_executable(blob)
    x, y = np.array([1, -2, 3], np.float32), np.array([4, 5, -6], np.int32)
    outputs = hlort_session.run(loaded, [x, y])
    for got, want in zip(outputs, [x + x, y, x], strict=True):
        np.testing.assert_array_equal(got, want)


def test_garbage_is_invalid_argument(hlort_session, serialized) -> None:
    with pytest.raises(HlortError) as info:
        hlort_session.client.deserialize_executable(b"this is not an executable")
    assert info.value.code is ErrorCode.INVALID_ARGUMENT, f"got {info.value.code.name}"


def test_corrupted_bytes_are_rejected(hlort_session, serialized) -> None:
    _, blob = serialized
    damaged = bytearray(blob)
    damaged[len(damaged) // 2] ^= 0xFF
    for bad in (bytes(damaged), blob[: len(blob) // 2]):
        with pytest.raises(HlortError) as info:
            hlort_session.client.deserialize_executable(bad)
        assert info.value.code in (ErrorCode.DATA_LOSS, ErrorCode.INVALID_ARGUMENT), (
            f"damaged bytes: expected DATA_LOSS or INVALID_ARGUMENT, got {info.value.code.name}"
        )


def test_another_platforms_executable_is_invalid_argument(hlort_session, serialized) -> None:
    from hlort.plugin.interpreter_backend import InterpreterPlugin
    from hlort.plugin.options import CompileOptions

    if hlort_session.platform == "interpreter":
        pytest.skip("needs a platform other than the interpreter to make a foreign executable")
    other = InterpreterPlugin().create_client()
    try:
        foreign = other.compile(axpy(16), CompileOptions()).serialize()
    finally:
        other.close()
    with pytest.raises(HlortError) as info:
        hlort_session.client.deserialize_executable(foreign)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT, f"got {info.value.code.name}"
