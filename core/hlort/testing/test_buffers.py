"""Host <-> device round trips: every element type, edge values, empty and scalar shapes, all
four host-buffer semantics, non-contiguous sources, and the errors for what cannot be a buffer.
"""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.options import HostBufferSemantics
from hlort.shape import ArrayShape
from hlort.testing.session import TIMEOUT_S
from hlort.testing.values import mixed, rng_for

_SHAPES = {"scalar": (), "empty": (0, 3), "vector": (17,), "rank3": (2, 3, 5)}
_SEMANTICS = list(HostBufferSemantics)


def _bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and a.tobytes() == np.ascontiguousarray(b).tobytes()
    )


def _skip_unsupported_dtype(session, dt) -> None:
    reason = session.profile.unsupported_reason(f"dtype:{dt.name}")
    if reason is None and not session.capabilities.supports_dtype(dt.name):
        reason = f"capabilities().dtypes does not include {dt.name}"
    if reason:
        pytest.skip(reason)


@pytest.mark.parametrize("shape_name", list(_SHAPES))
@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=lambda d: d.name)
def test_round_trip_is_bit_exact(hlort_session, dt, shape_name) -> None:
    _skip_unsupported_dtype(hlort_session, dt)
    dims = _SHAPES[shape_name]
    source = mixed(dt, dims, rng_for(f"round-trip-{dt.name}-{shape_name}"))
    original = source.copy()
    buf = hlort_session.client.buffer_from_host(source, hlort_session.device)
    source[...] = source.reshape(-1)[::-1].reshape(dims) if source.size else source
    assert buf.shape == ArrayShape(dt, dims), f"buffer shape {buf.shape}, expected {dt}{dims}"
    assert buf.dtype == dt and tuple(buf.dims) == dims
    assert buf.device is hlort_session.device
    back = buf.to_host().result(TIMEOUT_S)
    assert isinstance(back, np.ndarray)
    assert _bits_equal(back, original), (
        f"{dt.name}{list(dims)}: to_host returned {back!r}, expected {original!r} bit for bit "
        "(the buffer must not see changes the caller made after buffer_from_host returned)"
    )
    back[...] = original.reshape(-1)[:1].reshape(()) if original.size else back
    again = buf.to_host().result(TIMEOUT_S)
    assert _bits_equal(again, original), "to_host must return a copy, never device storage"
    size = buf.on_device_size_in_bytes()
    assert isinstance(size, int) and size >= 0
    buf.delete()


@pytest.mark.parametrize("semantics", _SEMANTICS, ids=lambda s: s.value)
@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=lambda d: d.name)
def test_every_host_buffer_semantics(hlort_session, dt, semantics) -> None:
    _skip_unsupported_dtype(hlort_session, dt)
    source = mixed(dt, (4, 8), rng_for(f"semantics-{dt.name}-{semantics.value}"))
    original = source.copy()
    buf = hlort_session.client.buffer_from_host(source, hlort_session.device, semantics)
    if semantics is HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL:
        source[...] = source[::-1]  # allowed as soon as the call returned
    buf.ready_event().wait(TIMEOUT_S)
    if semantics is HostBufferSemantics.IMMUTABLE_UNTIL_TRANSFER_COMPLETES:
        source[...] = source[::-1]  # allowed once the buffer is ready
    back = buf.to_host().result(TIMEOUT_S)
    assert _bits_equal(back, original), f"{semantics.value}: contents changed"
    buf.delete()
    if semantics is HostBufferSemantics.IMMUTABLE_ZERO_COPY:
        assert _bits_equal(source, original), "IMMUTABLE_ZERO_COPY: the runtime wrote to the array"


@pytest.mark.parametrize("semantics", _SEMANTICS, ids=lambda s: s.value)
def test_non_contiguous_sources(hlort_session, semantics) -> None:
    base = np.arange(60, dtype=np.float32).reshape(6, 10)
    for view in (base.T, base[::2, 1::3], base[:, 3]):
        buf = hlort_session.client.buffer_from_host(view, hlort_session.device, semantics)
        back = buf.to_host().result(TIMEOUT_S)
        np.testing.assert_array_equal(back, np.ascontiguousarray(view))
        assert back.shape == view.shape
        buf.delete()


def test_arrays_without_an_element_type_are_invalid_argument(hlort_session) -> None:
    for bad in (np.array(["a", "b"]), np.array([object()])):
        with pytest.raises(HlortError) as info:
            hlort_session.client.buffer_from_host(bad, hlort_session.device)
        assert info.value.code is ErrorCode.INVALID_ARGUMENT, (
            f"buffer_from_host({bad.dtype}) raised {info.value.code.name}, expected "
            "INVALID_ARGUMENT"
        )


def test_arrays_in_the_other_byte_order_hold_their_values(hlort_session) -> None:
    values = np.array([1.5, -2.0, np.inf, 0.0])
    for order in (">", "<"):
        array = values.astype(np.dtype(f"{order}f4"))
        buf = hlort_session.client.buffer_from_host(array, hlort_session.device)
        back = buf.to_host().result(TIMEOUT_S)
        assert back.dtype == np.float32, f"a {array.dtype.str} array became {back.dtype.str}"
        np.testing.assert_array_equal(back, values.astype(np.float32))


def test_a_device_of_another_client_is_invalid_argument(hlort_session) -> None:
    from hlort.plugin.interpreter_backend import InterpreterPlugin

    other = InterpreterPlugin().create_client()
    try:
        with pytest.raises(HlortError) as info:
            hlort_session.client.buffer_from_host(np.zeros(2, np.float32), other.devices()[0])
        assert info.value.code is ErrorCode.INVALID_ARGUMENT
    finally:
        other.close()
