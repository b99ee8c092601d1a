"""The data pointer of a NumPy array, for the pointer tables kernels and gemm calls take.

Every kernel call builds a table of its operands' addresses, so this runs several times per
step. ``a.ctypes.data`` costs ~1-2 us, the buffer protocol (``addressof(c_char.from_buffer(a))``)
~0.35 and works only on writable arrays. Reading the ``data`` field of the array object itself
(NumPy's ``PyArrayObject_fields``: the first field after the object header, what the C macro
``PyArray_DATA`` reads) costs ~0.15 and works on read-only arrays too. Its offset is found at
import by probing arrays whose addresses the slow path also gives; where no offset agrees (a
different object header), or for anything but a plain ndarray, the buffer protocol is used.
"""

from __future__ import annotations

import ctypes

import numpy as np

_c_char, _addressof = ctypes.c_char, ctypes.addressof
_from_address = ctypes.c_void_p.from_address
_ndarray = np.ndarray


def _data_offset() -> int | None:
    """The byte offset of the data pointer in an ndarray object, checked on a few arrays."""
    base = np.arange(64, dtype=np.float64)
    samples = [base, base[3:], base[::2], base.reshape(8, 8).T, np.empty(0), np.float32(1) + base]
    samples.append(np.frombuffer(bytes(16), np.uint8))  # read-only
    for offset in (16, 24, 32):  # after the object header (a free-threaded one is larger)
        if all(_from_address(id(x) + offset).value == x.ctypes.data for x in samples):
            return offset
    return None


_OFFSET = _data_offset()


def _by_buffer(a: np.ndarray) -> int:
    try:  # the buffer protocol: 2-3x cheaper than a.ctypes.data (writable arrays only)
        return _addressof(_c_char.from_buffer(a))
    except (TypeError, ValueError):
        return a.ctypes.data


def _by_field(a: np.ndarray) -> int:
    if type(a) is _ndarray:
        return _from_address(id(a) + _OFFSET).value or 0
    return _by_buffer(a)


address = _by_buffer if _OFFSET is None else _by_field  # the data pointer of an array
