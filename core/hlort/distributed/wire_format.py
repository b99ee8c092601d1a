"""The bytes one process sends another in a cross-process exchange: a header, then the arrays.

One MPI message per (exchange, peer) carries every array a process contributes, so a receiver
needs a single matched probe and never has to pair a header with data messages that another
thread could steal. Layout (every block starts on a 64-byte boundary)::

    [u64 little-endian header length][JSON header][pad] [array 0][pad] [array 1][pad] ...

The header names the exchange (``key``, compared as text so a stray message is recognised),
and per array its device id, element type (XLA name), dims, offset and byte count. The sender
sends its arrays in place (an MPI ``hindexed`` type over their addresses: no packing copy);
the receiver gets one contiguous buffer and returns views of it (no unpacking copy).
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hlort import dtypes
from hlort.errors import DataLoss

ALIGN = 64
_LENGTH = struct.Struct("<Q")
PAD = np.zeros(ALIGN, np.uint8)  # what the gaps between blocks are sent from


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def key_text(key: object) -> str:
    """The exchange's name on the wire: equal keys on two processes give equal text."""
    return repr(key)


@dataclass(frozen=True)
class Block:
    """A contiguous piece of the message: ``data`` is the array (or bytes) sent from memory."""

    data: np.ndarray
    offset: int


@dataclass(frozen=True)
class Outgoing:
    """A message ready to send: its blocks in order (pads included) and its total size."""

    blocks: tuple[Block, ...]
    nbytes: int


def encode(key: str, arrays: Mapping[int, np.ndarray]) -> Outgoing:
    """Lay out ``arrays`` (device id -> array) under ``key`` (a :func:`key_text`); contiguous
    copies are made only of arrays that are not contiguous already."""
    # np.ascontiguousarray would turn a 0-d array into a 1-d one
    contiguous = {d: np.asarray(a) for d, a in sorted(arrays.items())}
    contiguous = {
        d: a if a.flags.c_contiguous else a.copy(order="C") for d, a in contiguous.items()
    }
    entries = []
    # the header's own length depends on the offsets it lists: lay out after a first estimate
    header_room = ALIGN
    while True:
        offset = header_room
        entries = []
        for device_id, array in contiguous.items():
            entries.append(
                {
                    "device": int(device_id),
                    "dtype": dtypes.from_numpy(array.dtype).name,
                    "dims": list(array.shape),
                    "offset": offset,
                    "nbytes": int(array.nbytes),
                }
            )
            offset = _aligned(offset + array.nbytes)
        header = json.dumps({"key": key, "arrays": entries}).encode()
        if _LENGTH.size + len(header) <= header_room:
            break
        header_room = _aligned(_LENGTH.size + len(header))
    head = np.zeros(header_room, np.uint8)
    head[: _LENGTH.size] = np.frombuffer(_LENGTH.pack(len(header)), np.uint8)
    head[_LENGTH.size : _LENGTH.size + len(header)] = np.frombuffer(header, np.uint8)
    blocks = [Block(head, 0)]
    for entry, array in zip(entries, contiguous.values(), strict=True):
        raw = array.reshape(-1).view(np.uint8)
        blocks.append(Block(raw, entry["offset"]))
        gap = _aligned(entry["offset"] + array.nbytes) - (entry["offset"] + array.nbytes)
        if gap:
            blocks.append(Block(PAD[:gap], entry["offset"] + array.nbytes))
    return Outgoing(tuple(blocks), offset)


@dataclass(frozen=True)
class Incoming:
    """A received message: the exchange it belongs to and its arrays (views of the buffer)."""

    key: str
    arrays: dict[int, np.ndarray]


def decode(buffer: np.ndarray, source: str) -> Incoming:
    """Parse a received buffer (uint8, as sent by :func:`encode`); ``source`` names the sender."""
    if buffer.nbytes < _LENGTH.size:
        raise DataLoss(f"a message from {source} has {buffer.nbytes} bytes, too short for a header")
    (length,) = _LENGTH.unpack(buffer[: _LENGTH.size].tobytes())
    if _LENGTH.size + length > buffer.nbytes:
        raise DataLoss(
            f"a message from {source} declares a {length}-byte header but has {buffer.nbytes} bytes"
        )
    try:
        header = json.loads(buffer[_LENGTH.size : _LENGTH.size + length].tobytes())
    except ValueError as err:
        raise DataLoss(f"the header of a message from {source} is not JSON: {err}") from None
    arrays = {}
    for entry in header["arrays"]:
        start, nbytes = entry["offset"], entry["nbytes"]
        if start + nbytes > buffer.nbytes:
            raise DataLoss(
                f"a message from {source} for {header['key']} is truncated: device "
                f"{entry['device']}'s array needs bytes {start}..{start + nbytes}, "
                f"it has {buffer.nbytes}"
            )
        dtype = dtypes.from_hlo_name(entry["dtype"]).numpy
        flat = buffer[start : start + nbytes].view(dtype)
        arrays[int(entry["device"])] = flat.reshape(entry["dims"])
    return Incoming(header["key"], arrays)
