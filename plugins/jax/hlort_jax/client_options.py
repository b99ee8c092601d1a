"""Reading PJRT_NamedValue arrays (client create options) into a dict."""

from __future__ import annotations

import ctypes
import struct

from hlort_jax import abi_structs


def read_named_values(address: int | None, count: int) -> dict:
    out: dict = {}
    if not address or not count:
        return out
    cls = abi_structs.STRUCTS["NamedValue"]
    for item in (cls * count).from_address(address):
        name = ctypes.string_at(item.name, item.name_size).decode()
        if item.type == 0:
            out[name] = ctypes.string_at(item.value, item.value_size).decode()
        elif item.type == 1:
            out[name] = int(item.value)
        elif item.type == 2:
            out[name] = list((ctypes.c_int64 * item.value_size).from_address(item.value))
        elif item.type == 3:
            raw = struct.pack("<q", item.value)[:4]
            out[name] = struct.unpack("<f", raw)[0]
        else:
            out[name] = bool(item.value & 0xFF)
    return out
