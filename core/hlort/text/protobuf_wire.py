"""The protobuf wire format, by hand: enough to write and read XLA's HLO protos.

hlort writes ``xla.HloModuleProto`` (what jaxlib parses as an executable's optimized program)
and reads XLA's binary dumps without depending on ``protobuf``: the core stays NumPy-only. Only
proto3 scalars, strings, bytes, nested messages and packed repeated numbers are used, which is
all the HLO protos need. Writers skip fields equal to their proto3 default (0, false, empty), as
protobuf does, unless told to keep them (an empty message that must be *present*).

Packed integer lists (literal data of s32/s64/u32/u64 constants can hold millions of elements)
are encoded with NumPy, not a Python loop.
"""

from __future__ import annotations

import functools
import struct

import numpy as np

from hlort.errors import InvalidArgument

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
_MASK64 = (1 << 64) - 1
_ONE_BYTE = [bytes([v]) for v in range(128)]


def encode_varint(value: int) -> bytes:
    """A varint; negative values as their 64-bit two's complement (10 bytes), as int64 is."""
    if 0 <= value < 128:
        return _ONE_BYTE[value]
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = 64  # below this many values a Python loop beats NumPy's per-call cost


def encode_varints(values) -> bytes:
    """Many varints at once (int64/uint64/int32/bool/enum lists), vectorized when long."""
    if not isinstance(values, np.ndarray) and len(values) < _SMALL:
        return b"".join([encode_varint(int(v)) for v in values])
    array = np.asarray(values)
    if array.size == 0:
        return b""
    if array.dtype == np.uint64:
        u = array.reshape(-1)
    else:  # sign-extended to 64 bits, as protobuf writes negative int32 and int64
        u = array.reshape(-1).astype(np.int64).view(np.uint64)
    count = np.ones(u.shape, np.int64)
    for k in range(1, 10):  # bytes needed: one more for each 7 bits past the first 7
        count += u >= np.uint64(1 << (7 * k))
    out = np.empty(int(count.sum()), np.uint8)
    at = np.cumsum(count) - count  # where each value's first byte goes
    for k in range(10):  # byte k of every value that has one (few values have many)
        live = count > k
        if not live.any():
            break
        group = ((u[live] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8)
        group |= np.where(count[live] > k + 1, 0x80, 0).astype(np.uint8)
        out[at[live] + k] = group
    return out.tobytes()


@functools.cache
def key(field: int, wire: int) -> bytes:
    return encode_varint(field << 3 | wire)


class Message:
    """One message being written: ``m.int(1, 5).string(2, "x").message(3, inner)``."""

    __slots__ = ("parts",)

    def __init__(self):
        self.parts: list[bytes] = []

    def int(self, field: int, value: int | bool, keep: bool = False) -> Message:
        """int32/int64/uint64/bool/enum; 0 (false) is skipped unless ``keep``."""
        value = int(value)
        if value or keep:
            self.parts.append(key(field, VARINT) + encode_varint(value))
        return self

    def float32(self, field: int, value: float) -> Message:
        if value:
            self.parts.append(key(field, FIXED32) + struct.pack("<f", value))
        return self

    def bytes(self, field: int, value: bytes, keep: bool = False) -> Message:
        if value or keep:
            self.parts.append(key(field, LENGTH) + encode_varint(len(value)) + value)
        return self

    def string(self, field: int, value: str, keep: bool = False) -> Message:
        return self.bytes(field, value.encode("utf-8"), keep)

    def message(self, field: int, inner: Message | bytes, keep: bool = False) -> Message:
        """A nested message; an empty one is skipped unless ``keep`` (present but empty)."""
        data = inner.to_bytes() if isinstance(inner, Message) else inner
        return self.bytes(field, data, keep)

    def messages(self, field: int, inners) -> Message:
        """A repeated message field (each element written, empty ones too)."""
        for inner in inners:
            self.message(field, inner, keep=True)
        return self

    def ints(self, field: int, values) -> Message:
        """A packed repeated integer field (int64, int32, bool, enum)."""
        data = encode_varints(
            values if isinstance(values, (np.ndarray, list, tuple)) else list(values)
        )
        return self.bytes(field, data)

    def strings(self, field: int, values) -> Message:
        for value in values:
            self.string(field, value, keep=True)
        return self

    def to_bytes(self) -> bytes:
        return b"".join(self.parts)


# -- reading ---------------------------------------------------------------------------------
def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise InvalidArgument("truncated protobuf varint: the proto is cut short or corrupt")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & _MASK64, pos  # a 10th byte's bits past bit 63 are dropped
        shift += 7
        if shift > 63:
            raise InvalidArgument("protobuf varint longer than 10 bytes: the proto is corrupt")


def fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """``[(field number, wire type, value)]`` of one message: varints as (unsigned) ints,
    fixed and length-delimited values as bytes."""
    out = []
    pos, end = 0, len(data)
    while pos < end:
        tag, pos = decode_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == VARINT:
            value, pos = decode_varint(data, pos)
        elif wire == FIXED64:
            value, pos = data[pos : pos + 8], pos + 8
        elif wire == LENGTH:
            size, pos = decode_varint(data, pos)
            if pos + size > end:
                raise InvalidArgument("protobuf field runs past the end of its message")
            value, pos = data[pos : pos + size], pos + size
        elif wire == FIXED32:
            value, pos = data[pos : pos + 4], pos + 4
        else:
            raise InvalidArgument(f"unsupported protobuf wire type {wire} (field {number})")
        if pos > end:
            raise InvalidArgument("protobuf field runs past the end of its message")
        out.append((number, wire, value))
    return out


def signed(value: int) -> int:
    """An int64 read as an unsigned varint, back to its sign."""
    return value - (1 << 64) if value >= 1 << 63 else value


def unpack_varints(items, number: int, signed_values: bool = True) -> list[int]:
    """Every value of repeated integer field ``number``, packed or not."""
    out: list[int] = []
    for n, wire, value in items:
        if n != number:
            continue
        if wire == VARINT:
            out.append(signed(value) if signed_values else value)
        elif len(value) >= _SMALL:
            out += decode_packed_varints(value, signed_values).tolist()
        else:
            pos = 0
            while pos < len(value):
                v, pos = decode_varint(value, pos)
                out.append(signed(v) if signed_values else v)
    return out


def varints_array(items, number: int, signed_values: bool = True) -> np.ndarray:
    """:func:`unpack_varints` as one int64 (uint64 when not ``signed_values``) array."""
    dtype = np.int64 if signed_values else np.uint64
    parts = []
    for n, wire, value in items:
        if n != number:
            continue
        if wire == VARINT:
            parts.append(np.array([value], np.uint64).view(dtype))
        else:
            parts.append(decode_packed_varints(value, signed_values))
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def decode_packed_varints(data: bytes, signed_values: bool = True) -> np.ndarray:
    """A packed run of varints at once (a big integer constant's millions of values would take
    seconds one by one): int64 values, or uint64 when not ``signed_values``; the same checks
    and 64-bit truncation as :func:`decode_varint`."""
    raw = np.frombuffer(data, np.uint8)
    if raw.size == 0:
        return np.zeros(0, np.int64 if signed_values else np.uint64)
    if raw[-1] >= 0x80:
        raise InvalidArgument("truncated protobuf varint: the proto is cut short or corrupt")
    last = np.flatnonzero(raw < 0x80)  # each value's final byte
    first = np.concatenate(([0], last[:-1] + 1))
    sizes = last - first + 1
    if int(sizes.max()) > 10:
        raise InvalidArgument("protobuf varint longer than 10 bytes: the proto is corrupt")
    values = (raw[first] & 0x7F).astype(np.uint64)
    for k in range(1, int(sizes.max())):  # byte k of every value that has one (few have many)
        live = np.flatnonzero(sizes > k)
        part = (raw[first[live] + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        values[live] |= part  # bits past 63 drop, as decode_varint's mask drops them
    return values.view(np.int64) if signed_values else values
