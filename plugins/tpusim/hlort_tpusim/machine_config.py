"""The simulated machine: every number the compiler tiles for and the timing model charges.

One :class:`MachineConfig` describes one chip and how many chips a client has. The defaults are a
plausible TPU-like chip (documented in docs/tpusim.md); tests shrink memories to reach
out-of-memory and tiling cases quickly. Client options (``hlort.backend("tpusim", options=...)``
or ``create_client({...})``) override any field by name, e.g. ``{"hbm_bytes": 1 << 20}``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True)
class MachineConfig:
    """Per-chip resources, unit latencies and bandwidths. Cycles are at ``clock_hz``."""

    num_chips: int = 4
    clock_hz: float = 940e6
    # matrix unit: a systolic array of mxu_dim x mxu_dim MACs, bf16 inputs, f32 accumulation
    mxu_dim: int = 128
    mxu_fill_latency: int = 256  # cycles from the first row in to the first result out
    # vector unit: one op on a (sublanes x lanes) register per cycle
    vector_sublanes: int = 8
    vector_lanes: int = 128
    num_vregs: int = 32
    vpu_latency: int = 2
    transcendental_cycles: int = 4  # per register, on the EUP slot of the vector unit
    xlu_reduce_cycles: int = 8  # cross-lane reduction of one register
    # scalar unit
    num_sregs: int = 32
    scalar_cycles_per_element: int = 4  # the host-assisted scalar path, per element touched
    # memories
    vmem_bytes: int = 16 * MiB
    hbm_bytes: int = 16 * GiB
    hbm_alignment: int = 512
    # DMA between HBM and VMEM (and the host link for transfers)
    num_dma_engines: int = 4
    hbm_bandwidth: float = 600e9  # bytes/s
    dma_latency: int = 500  # cycles from issue to first byte
    host_link_bandwidth: float = 16e9  # bytes/s, host <-> HBM (PCIe-like)
    host_link_latency_s: float = 5e-6
    # chip-to-chip links
    ici_bandwidth: float = 100e9  # bytes/s per link
    ici_latency_s: float = 2e-6

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value <= 0:
                raise InvalidArgument(f"tpusim machine option {f.name}={value} must be positive")
        if self.mxu_dim % self.vector_lanes and self.vector_lanes % self.mxu_dim:
            raise InvalidArgument("mxu_dim and vector_lanes must divide one another")

    # -- derived quantities ------------------------------------------------------------------
    @property
    def vreg_elements(self) -> int:
        """32-bit elements in one vector register (8 x 128 = 1024 by default)."""
        return self.vector_sublanes * self.vector_lanes

    @property
    def hbm_bytes_per_cycle(self) -> float:
        return self.hbm_bandwidth / self.clock_hz

    @property
    def peak_flops(self) -> float:
        """Matrix-unit peak: mxu_dim^2 MACs per cycle, 2 flops each."""
        return 2.0 * self.mxu_dim * self.mxu_dim * self.clock_hz

    def seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def cycles(self, seconds: float) -> float:
        return seconds * self.clock_hz

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None) -> MachineConfig:
        """Defaults overridden by any option named like a field; other keys are ignored here."""
        if not options:
            return cls()
        names = {f.name: f for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in options.items():
            if key not in names:
                continue
            kind = type(getattr(cls(), key))
            try:
                kwargs[key] = kind(value)
            except (TypeError, ValueError):
                raise InvalidArgument(
                    f"tpusim option {key}={value!r} must be a {kind.__name__}"
                ) from None
        return cls(**kwargs)


DEFAULT_CONFIG = MachineConfig()
