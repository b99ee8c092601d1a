"""What one process sends another in a cross-process exchange: a header, then each array.

The header (JSON) names the exchange (``key``, compared as text so a message of another
exchange is recognised) and, per array, its device id, element type (XLA name) and dims. Each
array then travels as its own message, straight from and into NumPy memory: contiguous buffers
let MPI's shared-memory transport copy once, by the receiver (single-copy), so a large array
does not depend on the sender's progress. The receiver allocates from the header
(:func:`allocate`) before it posts the receives.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hlort import dtypes
from hlort.errors import DataLoss


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


def encode_header(key: str, arrays: Mapping[int, np.ndarray]) -> bytes:
    """The header for ``arrays`` (device id -> contiguous array, sent in this order)."""
    entries = [
        {"device": int(d), "dtype": dtypes.from_numpy(a.dtype).name, "dims": list(a.shape)}
        for d, a in arrays.items()
    ]
    return json.dumps({"key": key, "arrays": entries}).encode()


@dataclass(frozen=True)
class Header:
    """A received header: the exchange it belongs to and the arrays that follow, in order."""

    key: str
    devices: tuple[int, ...]
    dtypes: tuple[np.dtype, ...]
    dims: tuple[tuple[int, ...], ...]


def decode_header(data: bytes, source: str) -> Header:
    """Parse a header; ``source`` names the sender in errors."""
    try:
        header = json.loads(data)
        entries = header["arrays"]
        return Header(
            key=str(header["key"]),
            devices=tuple(int(e["device"]) for e in entries),
            dtypes=tuple(dtypes.from_hlo_name(e["dtype"]).numpy for e in entries),
            dims=tuple(tuple(int(x) for x in e["dims"]) for e in entries),
        )
    except (ValueError, KeyError, TypeError) as err:
        raise DataLoss(f"the header of a message from {source} is malformed: {err}") from None


def allocate(header: Header) -> dict[int, np.ndarray]:
    """Fresh arrays the header's messages are received into, by device id, in order."""
    return {
        d: np.empty(dims, dtype)
        for d, dtype, dims in zip(header.devices, header.dtypes, header.dims, strict=True)
    }
