"""A tpusim chip as a plugin device: HBM the host cannot touch, DMA-modelled transfers, links.

Storage is an :class:`~hlort_tpusim.hbm_allocator.HbmAllocation` in the chip's HBM, never a host
array (``host_memory = False``), so the base classes can only reach the data through
``copy_in``/``copy_out``, which model the host link's bandwidth and latency and add to the chip's
transfer statistics. Buffers on other chips of the client are reached over the modelled
inter-chip links (a ring), see :mod:`hlort_tpusim.buffer`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from hlort.plugin.base import SimpleDevice
from hlort.plugin.capabilities import MemoryStats
from hlort.shape import ArrayShape
from hlort_tpusim.hbm_allocator import HbmAllocation, HbmAllocator
from hlort_tpusim.machine_config import MachineConfig

if TYPE_CHECKING:
    from hlort_tpusim.profile import Profile

KIND = "tpusim-v1"


class TpuSimDevice(SimpleDevice):
    host_memory = False
    supports_zero_copy = False

    def __init__(self, client, chip: int, config: MachineConfig):
        attributes = {
            "clock_mhz": config.clock_hz / 1e6,
            "mxu": f"{config.mxu_dim}x{config.mxu_dim} bf16->f32",
            "vector_unit": f"{config.vector_sublanes}x{config.vector_lanes} f32",
            "vmem_bytes": config.vmem_bytes,
            "hbm_bytes": config.hbm_bytes,
            "hbm_gb_per_s": config.hbm_bandwidth / 1e9,
        }
        super().__init__(client, chip, KIND, attributes=attributes)
        self.config = config
        self.hbm = HbmAllocator(
            config.hbm_bytes, config.hbm_alignment, chip, name=f"tpusim:{chip} HBM"
        )
        self._lock = threading.Lock()
        self.stats: dict[str, float] = {
            "host_to_device_bytes": 0,
            "host_to_device_seconds": 0.0,
            "device_to_host_bytes": 0,
            "device_to_host_seconds": 0.0,
            "ici_bytes_in": 0,
            "ici_seconds_in": 0.0,
            "executions": 0,
            "execution_cycles": 0.0,
        }
        self.last_profile: Profile | None = None

    def _add(self, **deltas: float) -> None:
        with self._lock:
            for key, value in deltas.items():
                self.stats[key] += value

    def host_link_seconds(self, nbytes: int) -> float:
        return self.config.host_link_latency_s + nbytes / self.config.host_link_bandwidth

    def ici_seconds(self, nbytes: int, source_chip: int) -> float:
        """Ring of ``num_chips``: hops along the shorter way, store-and-forward per hop."""
        n = self.config.num_chips
        distance = abs(self.id - source_chip)
        hops = max(1, min(distance, n - distance))
        return hops * (self.config.ici_latency_s + nbytes / self.config.ici_bandwidth)

    # -- storage hooks --------------------------------------------------------------------------
    def allocate(self, shape: ArrayShape) -> HbmAllocation:
        return self.hbm.allocate(shape)

    def free(self, storage: Any) -> None:
        if isinstance(storage, HbmAllocation) and not storage.freed:
            self.hbm.free(storage)

    def copy_in(self, storage: HbmAllocation, array: np.ndarray) -> None:
        np.copyto(storage.data, np.asarray(array).reshape(storage.data.shape), casting="no")
        self._add(
            host_to_device_bytes=array.nbytes,
            host_to_device_seconds=self.host_link_seconds(array.nbytes),
        )

    def copy_out(self, storage: HbmAllocation, shape: ArrayShape) -> np.ndarray:
        out = np.array(storage.view_as(shape), copy=True, order="C")
        self._add(
            device_to_host_bytes=out.nbytes,
            device_to_host_seconds=self.host_link_seconds(out.nbytes),
        )
        return out

    def duplicate(self, storage: HbmAllocation, shape: ArrayShape) -> HbmAllocation:
        new = self.hbm.allocate(shape)
        np.copyto(new.data, storage.view_as(shape))
        return new

    def receive_from_chip(
        self, source: TpuSimDevice, storage: HbmAllocation, into: HbmAllocation
    ) -> HbmAllocation:
        """Copy a buffer from another chip's HBM over the links into ``into``."""
        np.copyto(into.data, storage.view_as(into.shape))
        self._add(
            ici_bytes_in=into.shape.nbytes,
            ici_seconds_in=self.ici_seconds(into.shape.nbytes, source.id),
        )
        return into

    def record_execution(self, profile: Profile) -> None:
        self._add(executions=1, execution_cycles=profile.cycles)
        self.last_profile = profile

    def memory_stats(self) -> MemoryStats:
        return MemoryStats(
            bytes_in_use=self.hbm.bytes_in_use,
            peak_bytes_in_use=self.hbm.peak_bytes,
            num_allocs=self.hbm.num_allocs,
            bytes_limit=self.hbm.capacity,
            largest_alloc_size=self.hbm.largest_alloc,
        )
