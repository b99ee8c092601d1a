"""The Python objects behind the bridge's PJRT handles: client, device, memory, buffer.

Each keeps the C-visible answers of its getters (strings, dimension arrays) alive for its own
lifetime, as PJRT requires, and holds the hlort runtime object it stands for.
"""

from __future__ import annotations

import ctypes
import struct
import threading

from hlort.plugin import api
from hlort_jax import pjrt_types
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import CStrings

MEMORY_KIND = "device"
MEMORY_KIND_ID = 0


class BridgeMemory:
    def __init__(self, device: BridgeDevice, index: int):
        self.device = device
        self.id = index
        self.c = CStrings()
        self.kind = self.c.put(MEMORY_KIND)
        text = f"{device.platform}:{device.raw.id}:{MEMORY_KIND}"
        self.debug_string = self.c.put(text)
        self.to_string = self.c.put(text)
        self.devices_array = 0  # set once the device has its handle

    @property
    def handle(self) -> int:
        return HANDLES.stable(self)


class BridgeDevice:
    """A device; its PJRT_DeviceDescription is the same object under a second handle."""

    def __init__(self, client: BridgeClient, raw: api.Device, index: int):
        self.client = client
        self.raw = raw
        self.platform = client.platform_name
        self.c = CStrings()
        self.kind = self.c.put(f"hlort {raw.kind}")
        self.debug_string = self.c.put(f"{self.platform}:{raw.id} ({raw.kind})")
        pretty = "".join(part.capitalize() for part in self.platform.split("_"))
        self.to_string = self.c.put(f"{pretty}Device(id={raw.id})")
        self.memory = BridgeMemory(self, index)
        self.memory_array = self.c.array(ctypes.c_void_p, [self.memory.handle])
        self.memory.devices_array = self.c.array(ctypes.c_void_p, [self.handle])
        self.description = _Description(self)
        # Buffer_Device / Buffer_Memory answers of this device's buffers, for the C cache.
        self.answers = (struct.pack("<Q", self.handle), struct.pack("<Q", self.memory.handle))

    @property
    def handle(self) -> int:
        return HANDLES.stable(self)


class _Description:
    def __init__(self, device: BridgeDevice):
        self.device = device

    @property
    def handle(self) -> int:
        return HANDLES.stable(self)


class BridgeClient:
    """One started hlort backend seen as a PJRT client named ``hlort_<backend>``."""

    def __init__(self, backend, platform_name: str):
        self.backend = backend
        self.platform_name = platform_name
        self.c = CStrings()
        self.name_c = self.c.put(platform_name)
        self.version_c = self.c.put(f"hlort {backend.platform} {backend.platform_version}")
        self.devices = [
            BridgeDevice(self, raw, i) for i, raw in enumerate(backend.client.addressable_devices())
        ]
        self.by_id = {d.raw.id: d for d in self.devices}
        self.device_array = self.c.array(ctypes.c_void_p, [d.handle for d in self.devices])
        self.memory_array = self.c.array(ctypes.c_void_p, [d.memory.handle for d in self.devices])

    @property
    def handle(self) -> int:
        return HANDLES.stable(self)

    def device_of_raw(self, raw: api.Device) -> BridgeDevice:
        return self.by_id[raw.id]


class BridgeBuffer:
    """A PJRT_Buffer: an hlort buffer plus its C-visible shape answers."""

    __slots__ = (
        "raw",
        "device",
        "type_code",
        "dims",
        "dims_array",
        "minor_to_major",
        "ext_refs",
        "lock",
        "__weakref__",
    )

    def __init__(self, raw: api.Buffer, device: BridgeDevice):
        self.raw = raw
        self.device = device
        self.type_code = pjrt_types.code_of(raw.dtype)
        self.dims = tuple(raw.dims)
        rank = len(self.dims)
        self.dims_array = (ctypes.c_int64 * max(1, rank))(*self.dims)
        self.minor_to_major = (ctypes.c_int64 * max(1, rank))(*range(rank - 1, -1, -1))
        self.ext_refs = 0
        self.lock = threading.Lock()
