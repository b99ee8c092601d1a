"""What one process sends another in a cross-process exchange: a header, then each array.

The header message is ``[u32 little-endian length][JSON][pad to 16][inline arrays]``. The JSON
names the exchange (``key``, compared as text so a message of another exchange is recognised)
and, per array, its device id, element type (XLA name) and dims. Arrays of at most
``INLINE_BYTES`` in all travel inside the header message (one message, one copy each way: what
small collectives need is few round trips). Larger ones travel after it, each as its own message
straight from and into NumPy memory: contiguous buffers let MPI's shared-memory transport copy
once, by the receiver (single copy), so a large array does not depend on the sender's progress.
The receiver allocates from the header (:func:`allocate`) before it posts those receives.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hlort import dtypes
from hlort.errors import DataLoss

INLINE_BYTES = 16 * 1024
ALIGN = 16  # every inline array starts on a 16-byte boundary (complex128's alignment)
_LENGTH = struct.Struct("<I")


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def key_text(key: object) -> str:
    """The exchange's name on the wire: equal keys on two processes give equal text."""
    return repr(key)


def contiguous(array) -> np.ndarray:
    """``array`` as a C-contiguous ndarray of the same shape (a copy only when it is not one).

    Not ``np.ascontiguousarray``: that turns a 0-d array into a 1-d one."""
    array = np.asarray(array)
    return array if array.flags.c_contiguous else array.copy(order="C")


def as_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of a contiguous array, as a flat uint8 view (what MPI sends or fills)."""
    return array.reshape(-1).view(np.uint8)


def inline(arrays: Mapping[int, np.ndarray]) -> bool:
    """Whether ``arrays`` travel inside the header message."""
    return sum(a.nbytes for a in arrays.values()) <= INLINE_BYTES


def encode_header(key: str, arrays: Mapping[int, np.ndarray]) -> np.ndarray:
    """The header message for ``arrays`` (device id -> contiguous array, in this order), with
    the arrays inside when :func:`inline` says so; uint8, ready to send."""
    carried = inline(arrays)
    entries, offset = [], 0
    for d, a in arrays.items():
        entry = {"device": int(d), "dtype": dtypes.from_numpy(a.dtype).name, "dims": list(a.shape)}
        if carried:
            entry["offset"] = offset
            offset = _aligned(offset + a.nbytes)
        entries.append(entry)
    text = json.dumps({"key": key, "inline": carried, "arrays": entries}).encode()
    start = _aligned(_LENGTH.size + len(text))
    message = np.zeros(start + offset, np.uint8)
    message[: _LENGTH.size] = np.frombuffer(_LENGTH.pack(len(text)), np.uint8)
    message[_LENGTH.size : _LENGTH.size + len(text)] = np.frombuffer(text, np.uint8)
    if carried:
        for entry, a in zip(entries, arrays.values(), strict=True):
            at = start + entry["offset"]
            message[at : at + a.nbytes] = as_bytes(a)
    return message


@dataclass(frozen=True)
class Header:
    """A received header: the exchange it belongs to and the arrays, in order. ``inline`` holds
    the arrays when they came inside the message (views of it), else None: they follow."""

    key: str
    devices: tuple[int, ...]
    dtypes: tuple[np.dtype, ...]
    dims: tuple[tuple[int, ...], ...]
    inline: dict[int, np.ndarray] | None = None


def decode_header(message: np.ndarray, source: str) -> Header:
    """Parse a received header message (uint8); ``source`` names the sender in errors."""
    try:
        (length,) = _LENGTH.unpack(message[: _LENGTH.size].tobytes())
        header = json.loads(message[_LENGTH.size : _LENGTH.size + length].tobytes())
        entries = header["arrays"]
        parsed = Header(
            key=str(header["key"]),
            devices=tuple(int(e["device"]) for e in entries),
            dtypes=tuple(dtypes.from_hlo_name(e["dtype"]).numpy for e in entries),
            dims=tuple(tuple(int(x) for x in e["dims"]) for e in entries),
        )
        if not header["inline"]:
            return parsed
        start = _aligned(_LENGTH.size + length)
        arrays = {}
        for entry, dtype, dims in zip(entries, parsed.dtypes, parsed.dims, strict=True):
            at = start + int(entry["offset"])
            nbytes = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
            if at + nbytes > message.nbytes:
                raise DataLoss(
                    f"a message from {source} for {parsed.key} is truncated: device "
                    f"{entry['device']}'s array needs bytes {at}..{at + nbytes}, it has "
                    f"{message.nbytes}"
                )
            arrays[int(entry["device"])] = message[at : at + nbytes].view(dtype).reshape(dims)
        return Header(parsed.key, parsed.devices, parsed.dtypes, parsed.dims, arrays)
    except (ValueError, KeyError, TypeError, struct.error) as err:
        raise DataLoss(f"the header of a message from {source} is malformed: {err}") from None


def allocate(header: Header) -> dict[int, np.ndarray]:
    """Fresh arrays the header's messages are received into, by device id, in order."""
    return {
        d: np.empty(dims, dtype)
        for d, dtype, dims in zip(header.devices, header.dtypes, header.dims, strict=True)
    }
