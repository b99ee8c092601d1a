"""The object behind PJRT_LoadedExecutable / PJRT_Executable handles."""

from __future__ import annotations

import ctypes

from hlort_jax import pjrt_types
from hlort_jax.bridge_objects import MEMORY_KIND, BridgeDevice
from hlort_jax.pjrt_call import CStrings


class BridgeExecutable:
    def __init__(self, exe, device: BridgeDevice, compile_options: bytes, donated):
        self.exe = exe  # hlort.runtime.Executable
        self.raw = exe.raw
        self.device = device
        self.compile_options = compile_options
        self.donated = tuple(donated)
        self.deleted = False
        self.c = CStrings()
        self.name_c = self.c.put(exe.name or "main")
        shapes = list(exe.output_shapes)
        self.num_outputs = len(shapes)
        self.type_array = self.c.array(
            ctypes.c_int32, [pjrt_types.code_of(s.dtype) for s in shapes]
        )
        dims = [d for s in shapes for d in s.dims]
        self.dims_array = self.c.array(ctypes.c_int64, dims)
        self.dim_sizes_array = self.c.array(ctypes.c_size_t, [len(s.dims) for s in shapes])
        kind_address, kind_size = self.c.put(MEMORY_KIND)
        self.kinds_array = self.c.array(ctypes.c_void_p, [kind_address] * self.num_outputs)
        self.kind_sizes_array = self.c.array(ctypes.c_size_t, [kind_size] * self.num_outputs)
        self.device_array = self.c.array(ctypes.c_void_p, [device.handle])
        self._fingerprint = None
        self._cost = None

    def fingerprint_c(self) -> tuple[int, int]:
        if self._fingerprint is None:
            self._fingerprint = self.c.put(self.raw.fingerprint())
        return self._fingerprint
