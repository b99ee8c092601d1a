"""The cycle model: an in-order scalar core issuing to asynchronous units, with scoreboards.

Why this shape: it is the smallest model in which double buffering matters. The scalar core
issues one instruction per cycle and only stalls on ``wait`` (DMA semaphores), ``sld`` and host
ops. Every other unit (4 DMA engines sharing the HBM bandwidth, the MXU and its weight loader,
the vector unit) starts an instruction when the unit is free and its operands are ready, and
each VMEM tile slot and HBM buffer keeps two times: when its last write completes (reads wait
for it) and when its last read completes (a write waits for it, the hazard double buffering
avoids). Costs:

* DMA: ``dma_latency + bytes / (hbm_bandwidth / clock)``; transfers share one HBM pipe, so
  concurrent DMAs split the bandwidth and a memory-bound kernel takes bytes / bandwidth.
* MXU: ``mxu.push`` loads weights on the weight path (``mxu_dim`` cycles per block, hidden behind
  the previous matmul), ``mxu.matmul`` streams one lhs row per cycle per 128x128 weight block,
  times the number of bf16 passes of the precision (1, 3 or 6); results are ready
  ``mxu_fill_latency`` later; ``mxu.pop`` drains them through the vector unit, a register a cycle.
* VPU: a ``vloop`` costs, per register, the busiest of its slots (2 loads, 1 store, 2 ALU ops a
  cycle; transcendentals ``transcendental_cycles``), plus ``vpu_latency``.
* HOSTOP: ``scalar_cycles_per_element`` per element read and written plus its HBM bytes at the
  HBM bandwidth; the scalar core is blocked meanwhile.
* ICI (collectives): the chips of a group start together, when the last of them is ready (its
  operands written, its scalar core there), and take the ring link model's time
  (ring_model.py); the scalar core is blocked meanwhile.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field

from hlort_tpusim.isa import TRANSCENDENTAL_OPS, InstrClass
from hlort_tpusim.machine_config import MachineConfig

PASSES = {"bf16": 1, "bf16x3": 3, "bf16x6": 6}


@dataclass
class Slot:
    """Scoreboard entry of a VMEM slot or an HBM buffer."""

    ready: float = 0.0  # last write completes
    read_done: float = 0.0  # last read completes


class BandwidthPipe:
    """A shared bandwidth resource as busy intervals: a transfer takes the earliest free gap.

    Transfers are reserved in issue order but need not be served in it: a load issued after a
    store that still waits for its data uses the bandwidth before that store does, as the
    independent DMA queues of a real chip would.
    """

    def __init__(self) -> None:
        self.busy: list[list[float]] = []  # sorted, disjoint [start, end]

    def reserve(self, earliest: float, duration: float) -> tuple[float, float]:
        t = earliest
        for lo, hi in self.busy:
            if hi <= t:
                continue
            if lo >= t + duration:
                break
            t = max(t, hi)
        start, end = t, t + duration
        bisect.insort(self.busy, [start, end])
        self._merge()
        return start, end

    def _merge(self) -> None:
        merged: list[list[float]] = []
        for lo, hi in self.busy:
            if merged and lo <= merged[-1][1] + 1e-9:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        self.busy = merged

    def forget_before(self, t: float) -> None:
        """Drop intervals that end before ``t`` (no later request can start earlier)."""
        while len(self.busy) > 1 and self.busy[0][1] < t:
            del self.busy[0]

    @property
    def free_at(self) -> float:
        return self.busy[-1][1] if self.busy else 0.0


@dataclass
class TimingState:
    config: MachineConfig
    issue: float = 0.0
    dma_free: list[float] = field(default_factory=list)
    hbm: BandwidthPipe = field(default_factory=BandwidthPipe)
    mxu_free: float = 0.0
    wload_free: float = 0.0
    weights_ready: float = 0.0
    result_ready: float = 0.0
    vpu_free: float = 0.0
    scalar_free: float = 0.0
    sems: dict = field(default_factory=lambda: defaultdict(float))
    slots: dict = field(default_factory=lambda: defaultdict(Slot))
    end: float = 0.0
    busy: dict = field(default_factory=lambda: defaultdict(float))
    counts: dict = field(default_factory=lambda: defaultdict(int))
    hbm_read: int = 0
    hbm_written: int = 0
    mxu_macs: float = 0.0
    mxu_cycles: float = 0.0

    def __post_init__(self) -> None:
        if not self.dma_free:
            self.dma_free = [0.0] * self.config.num_dma_engines

    def _finish(self, t: float) -> None:
        self.end = max(self.end, t)

    def count(self, cls: InstrClass, cycles: float = 0.0) -> None:
        self.counts[cls.value] += 1
        self.busy[cls.value] += cycles

    def tick(self, cls: InstrClass) -> None:
        """An instruction that only occupies an issue slot of the scalar core."""
        self.issue += 1
        self.count(cls)
        self._finish(self.issue)

    # -- DMA --------------------------------------------------------------------------------
    def dma(
        self,
        nbytes: int,
        reads: list,
        writes: list,
        sem=None,
        to_hbm: bool = False,
        hbm_bytes: int | None = None,
    ) -> None:
        """A transfer of ``nbytes`` that reads ``reads`` and writes ``writes`` (scoreboard keys)."""
        cfg = self.config
        engine = min(range(len(self.dma_free)), key=self.dma_free.__getitem__)
        start = max(self.issue, self.dma_free[engine])
        for key in reads:
            start = max(start, self.slots[key].ready)
        for key in writes:
            s = self.slots[key]
            start = max(start, s.ready, s.read_done)
        traffic = nbytes if hbm_bytes is None else hbm_bytes
        self.hbm.forget_before(self.issue)
        _, xfer_end = self.hbm.reserve(start, traffic / cfg.hbm_bytes_per_cycle)
        done = xfer_end + cfg.dma_latency
        self.dma_free[engine] = done
        for key in reads:
            self.slots[key].read_done = max(self.slots[key].read_done, xfer_end)
        for key in writes:
            self.slots[key].ready = done
        if sem is not None:
            self.sems[sem] = max(self.sems[sem], done)
        if to_hbm:
            self.hbm_written += traffic
        else:
            self.hbm_read += traffic
        self.count(InstrClass.DMA, done - start)
        self.issue += 1
        self._finish(done)

    def wait(self, sems: list) -> None:
        t = self.issue
        for s in sems:
            t = max(t, self.sems[s])
        self.issue = t + 1
        self.count(InstrClass.SYNC)
        self._finish(self.issue)

    # -- MXU --------------------------------------------------------------------------------
    def mxu_push(self, src: tuple, blocks: int, precision: str) -> None:
        cfg = self.config
        start = max(self.issue, self.wload_free, self.slots[src].ready)
        cost = cfg.mxu_dim * PASSES.get(precision, 1)
        self.wload_free = start + cost
        self.weights_ready = start + cost
        self.slots[src].read_done = max(self.slots[src].read_done, start + cost)
        self.count(InstrClass.MXU, 0)
        self.issue += 1
        self._finish(self.wload_free)

    def mxu_matmul(self, src: tuple, blocks: int, rows: int, precision: str, macs: float) -> None:
        cfg = self.config
        start = max(self.issue, self.mxu_free, self.weights_ready, self.slots[src].ready)
        passes = PASSES.get(precision, 1)
        cost = blocks * max(rows, 1) * passes
        if rows < cfg.mxu_dim:  # weight loads no longer hide behind the stream
            cost += blocks * (cfg.mxu_dim - rows) * passes
        self.mxu_free = start + cost
        self.wload_free = max(self.wload_free, start)
        self.result_ready = self.mxu_free + cfg.mxu_fill_latency
        self.slots[src].read_done = max(self.slots[src].read_done, self.mxu_free)
        self.mxu_macs += macs
        self.mxu_cycles += cost
        self.count(InstrClass.MXU, cost)
        self.issue += 1
        self._finish(self.result_ready)

    def mxu_pop(self, dst: tuple, vregs: int) -> None:
        s = self.slots[dst]
        start = max(self.issue, self.result_ready, self.vpu_free, s.ready, s.read_done)
        end = start + vregs
        self.vpu_free = end
        s.ready = end
        self.count(InstrClass.MXU, vregs)
        self.issue += 1
        self._finish(end)

    # -- VPU --------------------------------------------------------------------------------
    def vloop(
        self, vregs: int, loads: int, stores: int, alu: list[str], reads: list, writes: list
    ) -> None:
        cfg = self.config
        trans = sum(1 for op in alu if op in TRANSCENDENTAL_OPS)
        alu_cycles = (len(alu) - trans) / 2 + trans * cfg.transcendental_cycles
        per_vreg = max(loads / 2, stores, alu_cycles, 1)
        cost = vregs * per_vreg + cfg.vpu_latency
        start = max(self.issue, self.vpu_free)
        for key in reads:
            start = max(start, self.slots[key].ready)
        for key in writes:
            s = self.slots[key]
            start = max(start, s.ready, s.read_done)
        end = start + cost
        self.vpu_free = end
        for key in reads:
            self.slots[key].read_done = max(self.slots[key].read_done, end)
        for key in writes:
            self.slots[key].ready = end
        self.count(InstrClass.VPU, cost)
        self.issue += 1
        self._finish(end)

    def vreduce(self, in_vregs: int, out_vregs: int, reads: list, writes: list) -> None:
        cfg = self.config
        cost = in_vregs + out_vregs * cfg.xlu_reduce_cycles + cfg.vpu_latency
        start = max(self.issue, self.vpu_free)
        for key in reads:
            start = max(start, self.slots[key].ready)
        for key in writes:
            start = max(start, self.slots[key].ready, self.slots[key].read_done)
        end = start + cost
        self.vpu_free = end
        for key in reads:
            self.slots[key].read_done = max(self.slots[key].read_done, end)
        for key in writes:
            self.slots[key].ready = end
        self.count(InstrClass.VPU, cost)
        self.issue += 1
        self._finish(end)

    # -- scalar and host-assisted -------------------------------------------------------------
    def blocking(
        self,
        cls: InstrClass,
        cycles: float,
        reads: list,
        writes: list,
        hbm_read: int = 0,
        hbm_written: int = 0,
    ) -> None:
        """Work the scalar core waits for (host ops, scalar loads, HBM-to-HBM copies)."""
        start = self.issue
        for key in reads:
            start = max(start, self.slots[key].ready)
        for key in writes:
            start = max(start, self.slots[key].ready, self.slots[key].read_done)
        traffic = (hbm_read + hbm_written) / self.config.hbm_bytes_per_cycle
        if traffic:
            start, _ = self.hbm.reserve(start, traffic)
        end = start + max(cycles, traffic)
        for key in reads:
            self.slots[key].read_done = max(self.slots[key].read_done, end)
        for key in writes:
            self.slots[key].ready = end
        self.hbm_read += hbm_read
        self.hbm_written += hbm_written
        self.issue = end
        self.count(cls, cycles)
        self._finish(end)

    def ready_for(self, reads: list, writes: list) -> float:
        """The earliest cycle an instruction reading ``reads`` and writing ``writes`` can start
        on this chip (a collective's arrival at its rendezvous)."""
        start = self.issue
        for key in reads:
            start = max(start, self.slots[key].ready)
        for key in writes:
            start = max(start, self.slots[key].ready, self.slots[key].read_done)
        return start

    def collective(self, start: float, cycles: float, reads: list, writes: list) -> float:
        """A collective that begins at ``start`` (when every chip of its group has arrived) and
        moves data over the links for ``cycles``; returns when it ends."""
        end = start + cycles
        for key in reads:
            self.slots[key].read_done = max(self.slots[key].read_done, end)
        for key in writes:
            self.slots[key].ready = end
        self.issue = end
        self.count(InstrClass.ICI, cycles)
        self._finish(end)
        return end

    def total_cycles(self) -> float:
        return max(self.end, self.issue)
