"""The header of a cross-process exchange and the arrays received after it, without MPI:
encode, decode, allocate, copy the bytes as MPI would."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes
from hlort.distributed import wire_format
from hlort.errors import DataLoss


def _roundtrip(arrays, key="k"):
    """What a receiver ends with: the header decoded, arrays allocated, bytes copied in."""
    sent = {d: wire_format.contiguous(a) for d, a in arrays.items()}
    header = wire_format.decode_header(wire_format.encode_header(key, sent), "process 1")
    assert header.key == key
    received = wire_format.allocate(header)
    assert list(received) == list(sent)  # the arrays follow the header in its order
    for device_id, array in received.items():
        wire_format.as_bytes(array)[:] = wire_format.as_bytes(sent[device_id])
    return received


@pytest.mark.parametrize(
    "name", ["pred", "s8", "u32", "s64", "f16", "bf16", "f8e5m2", "f64", "c128"]
)
def test_every_element_type_round_trips_bit_for_bit(name):
    dtype = dtypes.from_hlo_name(name).numpy
    rng = np.random.default_rng(7)
    arrays = {3: (rng.standard_normal((4, 5)) * 8).astype(dtype), 1: np.ones((2,), dtype)}
    got = _roundtrip(arrays)
    for device_id, array in arrays.items():
        assert got[device_id].dtype == dtype and got[device_id].shape == array.shape
        assert got[device_id].tobytes() == array.tobytes()


def test_shapes_keep_their_rank_and_strided_arrays_arrive_dense():
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    arrays = {0: np.float32(2.5).reshape(()), 1: np.zeros((0, 3), np.int32), 2: base[::2, 1::3]}
    got = _roundtrip(arrays)
    assert got[0].shape == () and got[0] == 2.5
    assert got[1].shape == (0, 3) and got[1].dtype == np.int32
    assert np.array_equal(got[2], base[::2, 1::3])


def test_contiguous_arrays_are_sent_from_their_own_memory():
    big = np.arange(1000, dtype=np.float64)
    assert np.shares_memory(wire_format.as_bytes(wire_format.contiguous(big)), big)
    strided = big[::2]
    dense = wire_format.contiguous(strided)
    assert dense.flags.c_contiguous and np.array_equal(dense, strided)


def test_a_malformed_header_is_data_loss_naming_the_sender():
    with pytest.raises(DataLoss, match="from process 3 is malformed"):
        wire_format.decode_header(b'{"key": "k"}', "process 3")
    with pytest.raises(DataLoss, match="from process 3 is malformed"):
        wire_format.decode_header(b"\x00\x01", "process 3")
