"""Collectives as host steps of the thunk program, on shared host memory.

All virtual cpu devices live in one process, so a collective is a runtime operation between
compiled kernels, as XLA:CPU's in-process collectives are: the device's thread hands its operand
arrays (no copy: the other devices read them in place) to the execution's rendezvous
(``hlort.plugin.base.launch_context``), waits for its group, and combines the group's values
with the semantics every backend shares (``hlort.plugin.base.collectives``), so the results
agree with the interpreter bit for bit. It never runs the instruction on the interpreter: it is
counted as compiled, not as a FALLBACK. A reducer computation (``to_apply``) is applied to whole
arrays at once.

An all-reduce whose group is all in this process runs on the shared memory directly. Its
reducer, when it is one NumPy ufunc that computes the interpreter's bits
(:mod:`hlort.plugin.base.native_reduce`: sums/products of f32, f64, integers; integer max/min),
is folded by ufunc calls with ``out=`` (no temporaries, the GIL released), in group order, so
the bits are the interpreter's. A large one is a reduce-scatter then an all-gather: member p
folds slice p of every member's operand straight into slice p of its own result, copies that
slice into every other member's result, and waits until all have done so (each member reads
``B`` and writes ``B/n`` folding, then writes ``(n-1)/n B``: memory-bound, spread over the
devices' threads). Other reducers take the same slices through the reducer computation.

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
from hlort.plugin.base.native_reduce import mpi_reducer, native_reducer
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS
from hlort_cpu.device_run import current
from hlort_cpu.host_pool import host_pool

ONE_COPY = LaunchContext(0, 0, 0, DEFAULT_EXECUTE_OPTIONS)
SLICED_MIN_ELEMENTS = 1 << 14  # per operand: below it one whole fold per member is cheaper
CHUNK_BYTES = 1 << 20  # a folded chunk stays in cache while it is copied to the others
_ALL_REDUCES = (Opcode.ALL_REDUCE, Opcode.ALL_REDUCE_START)


class CollectiveThunk:
    """One collective (or async start / done) on the device whose run the thread is in."""

    def __init__(self, instr: Instruction, ins: list[int], out: int, evaluator):
        self.instr, self.ins, self.out, self.evaluator = instr, ins, out, evaluator
        self.label = f"{instr.opcode.value} (host collective)"
        self.all_reduce = instr.opcode in _ALL_REDUCES
        self.native = native_reducer(instr) if self.all_reduce else None
        self._groups: dict = {}
        self.sliced = self.all_reduce and all(
            math.prod(o.shape.dims) >= SLICED_MIN_ELEMENTS for o in instr.operands
        )

    def __call__(self, env) -> None:
        ctx = current().context
        operands = [env[i] for i in self.ins]
        if self.all_reduce and ctx is not None and ctx.rendezvous is not None:
            result = self._shared_all_reduce(operands, ctx)
            if result is not None:
                env[self.out] = result
                return
        env[self.out] = collective_result(
            self.instr, operands, ctx if ctx is not None else ONE_COPY, self.evaluator
        )

    def _group(self, ctx: LaunchContext) -> tuple[list[int], int, bool]:
        """This copy's group as device ids, its position, and whether all are here
        (remembered per device assignment: asked at every execution)."""
        r = ctx.rendezvous
        key = (r.device_assignment, ctx.flat_id, r.local_device_ids)
        found = self._groups.get(key)
        if found is None:
            groups = participant_groups(self.instr, r.num_replicas, r.num_partitions)
            group = next(g for g in groups if ctx.flat_id in g)
            devices = [r.device_of(i) for i in group]
            here = all(d in r.local_device_ids for d in devices)
            found = self._groups[key] = (devices, group.index(ctx.flat_id), here)
        return found

    def _shared_all_reduce(self, operands: list, ctx: LaunchContext):
        """The all-reduce on shared memory (module docstring), or across processes through
        MPI when the reducer allows; None when the group is one device or the general path
        must run (a reducer MPI lacks across processes)."""
        if not (self.sliced or self.native is not None):
            return None
        r = ctx.rendezvous
        devices, me, here = self._group(ctx)
        if len(devices) == 1:
            return None
        name = self.instr.name
        if not here:
            reducer = mpi_reducer(self.instr)
            if reducer is None or getattr(r.transport, "all_reduce", None) is None:
                return None
            values = tuple(np.require(o, requirements="C") for o in operands)
            key = (name, r.next_step(ctx.device_id, name))
            results = r.all_reduce(
                key, ctx.device_id, values, devices, reducer, empty=host_pool().empty
            )
            return results[0] if len(results) == 1 else tuple(results)
        n = len(devices)
        flat = tuple(np.ascontiguousarray(o).reshape(-1) for o in operands)
        pool = host_pool()  # warm pages: a fresh 64 MiB result faults ~16k pages
        outs = tuple(pool.empty((a.size,), a.dtype) for a in flat)
        step = r.next_step(ctx.device_id, name)
        everyone = r.exchange((name, step, "operands"), ctx.device_id, (flat, outs), devices)
        for k, out in enumerate(outs):
            if not self.sliced:  # small: every member folds the whole operand
                self.native.fold_into([v[0][k] for v in everyone], out)  # type: ignore[union-attr]
                continue
            lo, hi = _bounds(out.size, n, me)
            step_elements = max(1, CHUNK_BYTES // out.itemsize) if self.native else hi - lo
            for a in range(lo, hi, step_elements):  # in cache-sized chunks: folded, then sent
                b = min(hi, a + step_elements)
                parts = [v[0][k][a:b] for v in everyone]
                if self.native is not None:
                    self.native.fold_into(parts, out[a:b])
                else:
                    out[a:b] = reduce_values(self.evaluator, self.instr, parts)
                for p, v in enumerate(everyone):  # this member's slice into every other result
                    if p != me:
                        v[1][k][a:b] = out[a:b]
        if self.sliced:  # the others have written their slices into ``outs``
            r.exchange((name, step, "written"), ctx.device_id, None, devices)
        results = [o.reshape(np.shape(operands[k])) for k, o in enumerate(outs)]
        return results[0] if len(results) == 1 else tuple(results)


def _bounds(size: int, n: int, p: int) -> tuple[int, int]:
    """Slice p of n near-equal slices of [0, size)."""
    return size * p // n, size * (p + 1) // n


def is_collective(instr: Instruction) -> bool:
    return instr.opcode in COLLECTIVE_OPCODES
