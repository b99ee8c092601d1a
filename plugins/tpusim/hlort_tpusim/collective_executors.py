"""The simulator's ``ici.collective``: a collective between chips, over the modelled links.

Data: the chip's operand arrays meet the other chips' at the execution's rendezvous and combine
with the semantics every backend shares (``hlort.plugin.base.collectives``), bit for bit what
the interpreter computes. Time: every chip of a group arrives at its own simulated cycle (its
operands written, its scalar core there); the chips exchange those cycles, the transfers begin
when the last one has arrived, and they take the ring link model's time for the collective's
bytes over *all* groups at once (ring_model.py: groups sharing a link slow each other). The
profile lists each collective with its link time and how long the chip waited for its group.

A mixin of :class:`hlort_tpusim.simulator.Simulator`; it reads ``self.launch`` (the launch's
LaunchContext, or None for a program run outside an execution: one copy).
"""

from __future__ import annotations

import numpy as np

from hlort.errors import Internal
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.collectives import (
    collective_result,
    participant_groups,
    permute_pairs,
)
from hlort.plugin.base.launch_context import LaunchContext
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS
from hlort.shape import Token
from hlort_tpusim import ring_model
from hlort_tpusim.executors import executes
from hlort_tpusim.isa import Instr
from hlort_tpusim.ring_model import RingLinks

ONE_COPY = LaunchContext(0, 0, 0, DEFAULT_EXECUTE_OPTIONS)
_KINDS = {
    Opcode.ALL_REDUCE: ring_model.ALL_REDUCE,
    Opcode.ALL_REDUCE_START: ring_model.ALL_REDUCE,
    Opcode.ALL_GATHER: ring_model.ALL_GATHER,
    Opcode.ALL_GATHER_START: ring_model.ALL_GATHER,
    Opcode.REDUCE_SCATTER: ring_model.REDUCE_SCATTER,
    Opcode.ALL_TO_ALL: ring_model.ALL_TO_ALL,
    Opcode.COLLECTIVE_PERMUTE: ring_model.PERMUTE,
    Opcode.COLLECTIVE_PERMUTE_START: ring_model.PERMUTE,
    Opcode.COLLECTIVE_BROADCAST: ring_model.BROADCAST,
}


class CollectiveExecutors:
    """``ici.collective``, registered in :data:`hlort_tpusim.executors.EXECUTORS`."""

    @executes("ici.collective")
    def _op_ici_collective(self, ins: Instr, a: dict) -> None:
        instr: Instruction = self._module(a["hlo"]).entry.root
        ctx = self.launch if self.launch is not None else ONE_COPY
        leaves = [self.array(b) for b in a["ins"]]
        reads = [self._hkey(b) for b in a["ins"]]
        writes = [self._hkey(b) for b in a["outs"]]
        arrival = self.timing.ready_for(reads, writes)
        value = collective_result(instr, leaves, ctx, self.ev)
        flat = _flatten(value)
        outs = [self.array(b) for b in a["outs"]]
        if len(flat) != len(outs):
            raise Internal(
                f"ici.collective {a['opcode']} gave {len(flat)} outputs, expected {len(outs)}"
            )
        for dst, v in zip(outs, flat, strict=True):
            np.copyto(dst, np.asarray(v).reshape(dst.shape))
        kind = _KINDS[instr.opcode]
        chip_groups, chip_pairs, my_group = self._chip_groups(instr, ctx, kind)
        size = len(my_group)
        nbytes = sum(x.nbytes for x in leaves)
        if kind == ring_model.ALL_GATHER:
            nbytes *= size  # B is the gathered array
        cost = RingLinks(
            self.config.num_chips, self.config.ici_bandwidth, self.config.ici_latency_s
        ).collective(kind, nbytes, chip_groups, chip_pairs)
        start = self._group_arrival(instr, ctx, arrival, my_group)
        cycles = self.config.cycles(cost.seconds)
        self.timing.collective(start, cycles, reads, writes)
        self.collectives.append(
            {
                "name": instr.name,
                "kind": kind,
                "bytes": int(nbytes),
                "group_size": size,
                "steps": cost.steps,
                "link_seconds": cost.seconds,
                "wait_seconds": self.config.seconds(start - arrival),
                "cycles": round(cycles, 1),
            }
        )

    def _chip_groups(self, instr: Instruction, ctx: LaunchContext, kind: str):
        """Every group's chips (device ids are chip ids), a permute's chip pairs, and the chips
        this chip synchronizes its clock with (its group; a permute: every copy)."""
        replicas, partitions = ctx.num_replicas, ctx.num_partitions
        chip = ctx.rendezvous.device_of if ctx.rendezvous is not None else (lambda flat: flat)
        copies = [chip(i) for i in range(replicas * partitions)]
        if kind == ring_model.PERMUTE:
            pairs = [(chip(s), chip(t)) for s, t in permute_pairs(instr, replicas, partitions)]
            return [copies], pairs, copies
        groups = [[chip(i) for i in g] for g in participant_groups(instr, replicas, partitions)]
        mine = next((g for g in groups if ctx.device_id in g), [ctx.device_id])
        return groups, [], mine

    def _group_arrival(
        self, instr: Instruction, ctx: LaunchContext, arrival: float, group: list[int]
    ) -> float:
        """The cycle the last chip of ``group`` arrived (each chip's simulated clock starts
        at 0 when the execution launches every chip together)."""
        rendezvous = ctx.rendezvous
        if rendezvous is None or len(group) == 1:
            return arrival
        name = f"{instr.name}/clock"
        key = (name, rendezvous.next_step(ctx.device_id, name))
        clocks = rendezvous.exchange(key, ctx.device_id, np.array([arrival]), group)
        return max(float(c[0]) for c in clocks)


def _flatten(value) -> list:
    if isinstance(value, tuple):
        out: list = []
        for v in value:
            out += _flatten(v)
        return out
    if isinstance(value, Token):
        return []
    return [value]
