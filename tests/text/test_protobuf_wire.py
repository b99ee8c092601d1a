"""The hand-written protobuf wire format against the encoding protobuf's documentation gives."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.text import protobuf_wire as W


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (150, b"\x96\x01"),  # protobuf's own example
        (300, b"\xac\x02"),
        (-1, b"\xff" * 9 + b"\x01"),  # int64 -1: ten bytes, two's complement
        (-2, b"\xfe" + b"\xff" * 8 + b"\x01"),
        ((1 << 63) - 1, b"\xff" * 8 + b"\x7f"),
    ],
)
def test_varints(value, encoded):
    assert W.encode_varint(value) == encoded
    decoded, end = W.decode_varint(encoded, 0)
    assert end == len(encoded) and W.signed(decoded) == value


def test_vectorized_varints_equal_one_by_one():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [
            rng.integers(-(1 << 63), (1 << 63) - 1, 500, dtype=np.int64),
            rng.integers(-300, 300, 500),
            np.array([0, 1, 127, 128, 16383, 16384, -1, np.iinfo(np.int64).min]),
        ]
    )
    assert W.encode_varints(values) == b"".join(W.encode_varint(int(v)) for v in values)
    unsigned = np.array([0, 1 << 63, (1 << 64) - 1, 12345], dtype=np.uint64)
    assert W.encode_varints(unsigned) == b"".join(W.encode_varint(int(v)) for v in unsigned)
    int32 = np.array([-5, 7, np.iinfo(np.int32).min], dtype=np.int32)  # sign-extended
    assert W.encode_varints(int32) == b"".join(W.encode_varint(int(v)) for v in int32)


def test_message_fields_read_back():
    inner = W.Message().int(1, 7).string(2, "héllo")
    m = W.Message().int(1, 150).int(2, 0).int(3, 0, keep=True).message(4, inner)
    m.ints(5, [1, -1, 300]).float32(6, 1.5).message(7, W.Message(), keep=True)
    m.message(8, W.Message())  # empty and not kept: absent
    items = W.fields(m.to_bytes())
    assert [(n, w) for n, w, _ in items] == [(1, 0), (3, 0), (4, 2), (5, 2), (6, 5), (7, 2)]
    assert items[0][2] == 150 and items[1][2] == 0
    assert W.fields(items[2][2]) == [(1, 0, 7), (2, 2, "héllo".encode())]
    assert W.unpack_varints(items, 5) == [1, -1, 300]
    assert np.frombuffer(items[4][2], "<f4")[0] == 1.5 and items[5][2] == b""


def test_the_documented_example_message():
    # protobuf's encoding guide: message Test1 { int32 a = 1; } with a = 150
    assert W.Message().int(1, 150).to_bytes() == bytes.fromhex("089601")
    # message Test2 { string b = 2; } with b = "testing"
    assert W.Message().string(2, "testing").to_bytes() == bytes.fromhex("120774657374696e67")


@pytest.mark.parametrize(
    "data", [b"\x08", b"\x08\x96", b"\x12\x07test", b"\x0b", b"\x08" + b"\xff" * 11]
)
def test_corrupt_input_is_invalid_argument(data):
    with pytest.raises(HlortError) as err:
        W.fields(data)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_a_tenth_varint_byte_beyond_64_bits_is_dropped_as_protobuf_does():
    """protobuf keeps the low 64 bits of a 10-byte varint (its 10th byte holds bit 63 only):
    the value stays an int64/uint64, never a 70-bit Python int that overflows NumPy later."""
    value, end = W.decode_varint(b"\xff" * 9 + b"\x7f", 0)
    assert end == 10 and value == (1 << 64) - 1 and W.signed(value) == -1
    assert W.unpack_varints([(1, W.LENGTH, b"\xff" * 9 + b"\x03")], 1) == [-1]


def _one_by_one(blob: bytes) -> list[int]:
    out, pos = [], 0
    while pos < len(blob):
        value, pos = W.decode_varint(blob, pos)
        out.append(value)
    return out


def test_packed_varints_decode_at_once_as_one_by_one():
    """A big integer constant's packed values are decoded with NumPy (one by one, millions of
    them took seconds): the same values, the same 64-bit truncation of a 10th byte."""
    rng = np.random.default_rng(1)
    values = np.concatenate(
        [
            rng.integers(-(1 << 63), (1 << 63) - 1, 300, dtype=np.int64),
            rng.integers(0, 300, 300),
            np.array([0, 1, 127, 128, 16383, 16384, -1, np.iinfo(np.int64).min]),
        ]
    )
    blob = W.encode_varints(values) + b"\xff" * 9 + b"\x7f"  # a 10th byte with bits past 63
    expected = _one_by_one(blob)
    unsigned = W.decode_packed_varints(blob, signed_values=False)
    assert unsigned.dtype == np.uint64 and unsigned.tolist() == expected
    assert W.decode_packed_varints(blob).tolist() == [W.signed(v) for v in expected]
    assert W.unpack_varints([(1, W.LENGTH, blob)], 1) == [W.signed(v) for v in expected]
    both = [(1, W.VARINT, 5), (2, W.VARINT, 9), (1, W.LENGTH, blob)]
    assert W.varints_array(both, 1).tolist() == [5] + [W.signed(v) for v in expected]
    assert W.varints_array([], 1).dtype == np.int64


@pytest.mark.parametrize("blob", [b"\x80" * 70, (b"\x80" * 11 + b"\x01") * 7])
def test_corrupt_packed_varints_are_invalid_argument(blob):
    with pytest.raises(HlortError) as err:
        W.unpack_varints([(1, W.LENGTH, blob)], 1)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
