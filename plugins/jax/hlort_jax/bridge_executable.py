"""The object behind PJRT_LoadedExecutable / PJRT_Executable handles.

An executable runs on one device or, for a program over ``num_replicas x num_partitions``
copies (sharded jit, shard_map, pmap), on that many devices: ``devices[k]`` runs copy
``(replica k // num_partitions, partition k % num_partitions)``, the order of the device
assignment and of ``LoadedExecutable_AddressableDevices`` (jaxlib passes one argument list per
device in that order). Output types and dimensions are each device's (the partitioned
program's), as XLA reports them.
"""

from __future__ import annotations

import ctypes

from hlort_jax import pjrt_types
from hlort_jax.bridge_objects import MEMORY_KIND, BridgeDevice
from hlort_jax.pjrt_call import CStrings


class BridgeExecutable:
    def __init__(self, exe, devices: list[BridgeDevice], compile_options: bytes, donated):
        self.exe = exe  # hlort.runtime.Executable
        self.raw = exe.raw
        self.devices = list(devices)
        self.device = self.devices[0]
        self.num_replicas = int(getattr(exe.raw, "num_replicas", 1) or 1)
        self.num_partitions = int(getattr(exe.raw, "num_partitions", 1) or 1)
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
        self.device_array = self.c.array(ctypes.c_void_p, [d.handle for d in self.devices])
        self._fingerprint = None
        self._cost = None
        self.shardings_c = None  # handlers_shardings' C answers

    def assignment(self) -> list[list[int]]:
        """[replica][partition] device ids."""
        ids = [d.raw.id for d in self.devices]
        p = self.num_partitions
        return [ids[r * p : (r + 1) * p] for r in range(len(ids) // p)]

    def fingerprint_c(self) -> tuple[int, int]:
        if self._fingerprint is None:
            self._fingerprint = self.c.put(self.raw.fingerprint())
        return self._fingerprint
