"""The header of a cross-process exchange and the arrays received after it, without MPI:
encode, decode, allocate, copy the bytes as MPI would."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes
from hlort.distributed import wire_format
from hlort.errors import DataLoss


def _roundtrip(arrays, key="k"):
    """What a receiver ends with: the header message decoded, and the arrays either inside it
    (small) or allocated from it and filled with the bytes MPI would move (large)."""
    sent = {d: wire_format.contiguous(a) for d, a in arrays.items()}
    message = wire_format.encode_header(key, sent)
    header = wire_format.decode_header(message.copy(), "process 1")
    assert header.key == key
    if wire_format.inline(sent):
        received = header.inline
    else:
        assert header.inline is None
        received = wire_format.allocate(header)
        for device_id, array in received.items():
            wire_format.as_bytes(array)[:] = wire_format.as_bytes(sent[device_id])
    assert list(received) == list(sent)  # in the header's order
    return received


@pytest.mark.parametrize("rows", [4, 2000], ids=["inline", "separate"])
@pytest.mark.parametrize(
    "name", ["pred", "s8", "u32", "s64", "f16", "bf16", "f8e5m2", "f64", "c128"]
)
def test_every_element_type_round_trips_bit_for_bit(name, rows):
    dtype = dtypes.from_hlo_name(name).numpy
    rng = np.random.default_rng(7)
    arrays = {3: (rng.standard_normal((rows, 5)) * 8).astype(dtype), 1: np.ones((3,), dtype)}
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


def test_inline_arrays_start_aligned_and_large_ones_are_left_out():
    small = {0: np.ones(3, np.int8), 1: np.ones(2, np.complex128)}
    header = wire_format.decode_header(wire_format.encode_header("k", small), "p")
    assert all(a.ctypes.data % wire_format.ALIGN == 0 for a in header.inline.values())
    big = {0: np.ones(wire_format.INLINE_BYTES, np.int8), 1: np.ones(1, np.int8)}
    message = wire_format.encode_header("k", big)
    assert message.nbytes < 1000  # the arrays are not inside: they follow as their own messages


def test_a_malformed_or_truncated_header_is_data_loss_naming_the_sender():
    with pytest.raises(DataLoss, match="from process 3 is malformed"):
        wire_format.decode_header(np.frombuffer(b"\x05\x00\x00\x00{key}", np.uint8), "process 3")
    with pytest.raises(DataLoss, match="from process 3 is malformed"):
        wire_format.decode_header(np.zeros(2, np.uint8), "process 3")
    message = wire_format.encode_header("k", {4: np.ones(100, np.float32)})
    with pytest.raises(DataLoss, match="from process 3 for k is truncated: device 4"):
        wire_format.decode_header(message[:-8], "process 3")
