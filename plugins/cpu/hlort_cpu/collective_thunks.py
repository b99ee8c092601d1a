"""Collectives as host steps of the thunk program, on shared host memory.

All virtual cpu devices live in one process, so a collective is a runtime operation between
compiled kernels, as XLA:CPU's in-process collectives are: the device's thread hands its operand
arrays (no copy: the other devices read them in place) to the execution's rendezvous
(``hlort.plugin.base.launch_context``), waits for its group, and combines the group's values
with the semantics every backend shares (``hlort.plugin.base.collectives``), so the results
agree with the interpreter bit for bit. It never runs the instruction on the interpreter: it is
counted as compiled, not as a FALLBACK. A reducer computation (``to_apply``) is applied to whole
arrays at once.

A large all-reduce whose group is all in this process is split instead of being reduced whole
by every member: member p folds slice p of every member's operand (the same fold, in the same
group order, so the same bits), the members exchange their slices, and each concatenates them.
Each device then does 1/n of the reduction instead of all of it, like a reduce-scatter followed
by an all-gather, in shared memory.

Outside a launch (``execute_host``) and in a one-device execution the program is one copy:
every group is that copy alone. The step counts as the op's name plus ``(host collective)``.
"""

from __future__ import annotations

import math

import numpy as np

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.collectives import (
    COLLECTIVE_OPCODES,
    collective_result,
    participant_groups,
    reduce_values,
)
from hlort.plugin.base.launch_context import LaunchContext
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS
from hlort_cpu.device_run import current

ONE_COPY = LaunchContext(0, 0, 0, DEFAULT_EXECUTE_OPTIONS)
SLICED_MIN_ELEMENTS = 1 << 14  # per operand: below it one whole fold per member is cheaper
_ALL_REDUCES = (Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START)


class CollectiveThunk:
    """One collective (or async start / done) on the device whose run the thread is in."""

    def __init__(self, instr: Instruction, ins: list[int], out: int, evaluator):
        self.instr, self.ins, self.out, self.evaluator = instr, ins, out, evaluator
        self.label = f"{instr.opcode.value} (host collective)"
        self.sliced = instr.opcode in _ALL_REDUCES and all(
            math.prod(o.shape.dims) >= SLICED_MIN_ELEMENTS for o in instr.operands
        )

    def __call__(self, env) -> None:
        ctx = current().context
        operands = [env[i] for i in self.ins]
        if self.sliced and ctx is not None and ctx.rendezvous is not None:
            result = self._sliced_all_reduce(operands, ctx)
            if result is not None:
                env[self.out] = result
                return
        env[self.out] = collective_result(
            self.instr, operands, ctx if ctx is not None else ONE_COPY, self.evaluator
        )

    def _sliced_all_reduce(self, operands: list, ctx: LaunchContext):
        """The all-reduce, each member folding one slice (module docstring); None when the group
        is one device or reaches another process (the general path handles those)."""
        r = ctx.rendezvous
        groups = participant_groups(self.instr, r.num_replicas, r.num_partitions)
        group = next(g for g in groups if ctx.flat_id in g)
        devices = [r.device_of(i) for i in group]
        if len(devices) == 1 or any(d not in r.local_device_ids for d in devices):
            return None
        n, me, name = len(devices), group.index(ctx.flat_id), self.instr.name
        flat = tuple(np.ascontiguousarray(o).reshape(-1) for o in operands)
        step = r.next_step(ctx.device_id, name)
        everyone = r.exchange((name, step, "operands"), ctx.device_id, flat, devices)
        mine = []
        for k, a in enumerate(flat):
            bounds = np.linspace(0, a.size, n + 1).astype(np.int64)
            lo, hi = bounds[me], bounds[me + 1]
            mine.append(reduce_values(self.evaluator, self.instr, [v[k][lo:hi] for v in everyone]))
        parts = r.exchange((name, step, "slices"), ctx.device_id, tuple(mine), devices)
        results = [
            np.concatenate([p[k] for p in parts]).reshape(operands[k].shape)
            for k in range(len(operands))
        ]
        return results[0] if len(results) == 1 else tuple(results)


def is_collective(instr: Instruction) -> bool:
    return instr.opcode in COLLECTIVE_OPCODES
