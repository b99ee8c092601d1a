"""What one execution reports: cycles, modelled time, matrix-unit utilization, HBM traffic.

``utilization`` is useful multiply-accumulates (the unpadded dot sizes) over what the matrix
unit could have done in the whole execution (``mxu_dim**2`` per cycle): padding, DMA stalls and
non-matmul kernels all lower it. ``by_class`` gives, per instruction class, how many
instructions ran and the cycles their unit was busy (units overlap, so these do not sum to
``cycles``). ``collectives`` lists every collective the chip ran over the inter-chip links:
its instruction, kind, bytes, group size, ring steps, the modelled link time and how long the
chip waited for the rest of its group before the transfers could begin.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from hlort_tpusim.machine_config import MachineConfig
from hlort_tpusim.timing import TimingState


@dataclass(frozen=True)
class Profile:
    cycles: float
    seconds: float
    clock_hz: float
    mxu_utilization: float
    mxu_busy_cycles: float
    mxu_macs: float
    hbm_bytes_read: int
    hbm_bytes_written: int
    by_class: dict[str, dict[str, float]] = field(default_factory=dict)
    by_kernel: dict[str, float] = field(default_factory=dict)
    collectives: list[dict] = field(default_factory=list)

    @property
    def hbm_bytes(self) -> int:
        return self.hbm_bytes_read + self.hbm_bytes_written

    @classmethod
    def from_timing(
        cls,
        state: TimingState,
        config: MachineConfig,
        by_kernel: dict[str, float] | None = None,
        collectives: list[dict] | None = None,
    ) -> Profile:
        cycles = state.total_cycles()
        peak = config.mxu_dim * config.mxu_dim * max(cycles, 1.0)
        classes = {
            name: {"count": float(state.counts[name]), "busy_cycles": round(state.busy[name], 1)}
            for name in sorted(state.counts)
        }
        return cls(
            cycles=round(cycles, 1),
            seconds=config.seconds(cycles),
            clock_hz=config.clock_hz,
            mxu_utilization=state.mxu_macs / peak if cycles else 0.0,
            mxu_busy_cycles=round(state.mxu_cycles, 1),
            mxu_macs=state.mxu_macs,
            hbm_bytes_read=int(state.hbm_read),
            hbm_bytes_written=int(state.hbm_written),
            by_class=classes,
            by_kernel=dict(by_kernel or {}),
            collectives=list(collectives or []),
        )

    def to_dict(self) -> dict:
        out = asdict(self)
        out["hbm_bytes"] = self.hbm_bytes
        out["time_us"] = round(self.seconds * 1e6, 3)
        return out

    def summary(self) -> str:
        lines = [
            f"cycles {self.cycles:.0f} = {self.seconds * 1e6:.2f} us at "
            f"{self.clock_hz / 1e6:.0f} MHz",
            f"matrix-unit utilization {self.mxu_utilization * 100:.1f}% "
            f"({self.mxu_busy_cycles:.0f} busy cycles)",
            f"HBM bytes {self.hbm_bytes} (read {self.hbm_bytes_read}, "
            f"written {self.hbm_bytes_written})",
        ]
        for name, row in self.by_class.items():
            lines.append(
                f"  {name:<7} {int(row['count']):>8} instrs {row['busy_cycles']:>14.0f} cycles"
            )
        for c in self.collectives:
            lines.append(
                f"  {c['kind']} {c['name']}: {c['bytes']} bytes over {c['group_size']} chips, "
                f"{c['steps']} link steps, {c['link_seconds'] * 1e6:.3f} us on the links "
                f"(waited {c['wait_seconds'] * 1e6:.3f} us for the group)"
            )
        return "\n".join(lines)
