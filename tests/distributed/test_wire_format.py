"""The message layout of a cross-process exchange, without MPI: encode, lay the blocks out as
MPI's hindexed type would put them on the wire, decode."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes
from hlort.distributed import wire_format
from hlort.errors import DataLoss


def _wire(outgoing: wire_format.Outgoing) -> np.ndarray:
    """The contiguous bytes a receiver gets: every block at its offset, nothing in between."""
    buffer = np.full(outgoing.nbytes, 0xAB, np.uint8)
    position = 0
    for block in outgoing.blocks:
        assert block.offset == position, "blocks must be contiguous on the wire"
        buffer[position : position + block.data.nbytes] = block.data
        position += block.data.nbytes
    assert position == outgoing.nbytes
    return buffer


def _roundtrip(arrays, key="k"):
    incoming = wire_format.decode(_wire(wire_format.encode(key, arrays)), "process 1")
    assert incoming.key == key
    return incoming.arrays


@pytest.mark.parametrize(
    "name", ["pred", "s8", "u32", "s64", "f16", "bf16", "f8e5m2", "f64", "c128"]
)
def test_every_element_type_round_trips_bit_for_bit(name):
    dtype = dtypes.from_hlo_name(name).numpy
    rng = np.random.default_rng(7)
    arrays = {3: (rng.standard_normal((4, 5)) * 8).astype(dtype), 1: np.ones((2,), dtype)}
    got = _roundtrip(arrays)
    assert sorted(got) == [1, 3]
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


def test_arrays_are_sent_in_place_and_start_aligned():
    big = np.arange(1000, dtype=np.float64)
    outgoing = wire_format.encode("k", {0: big, 1: big[:3].copy()})
    assert any(np.shares_memory(block.data, big) for block in outgoing.blocks)  # no copy
    data_blocks = [b for b in outgoing.blocks[1:] if not np.shares_memory(b.data, wire_format.PAD)]
    assert len(data_blocks) == 2
    assert all(b.offset % wire_format.ALIGN == 0 for b in data_blocks)


def test_a_long_key_grows_the_header_block():
    key = "x" * 500
    arrays = {d: np.full((2,), d, np.int16) for d in range(40)}
    assert _roundtrip(arrays, key=key)[39].tolist() == [39, 39]


def test_a_truncated_message_is_data_loss_naming_the_sender():
    wire = _wire(wire_format.encode("k", {5: np.ones((100,), np.float32)}))
    with pytest.raises(DataLoss, match="from process 1 .*truncated: device 5"):
        wire_format.decode(wire[:200], "process 1")
    with pytest.raises(DataLoss, match="too short"):
        wire_format.decode(wire[:3], "process 1")
