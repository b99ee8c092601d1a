"""Collectives for plugins: run one collective instruction on one device of an execution.

A backend that keeps its values in host memory (or copies them there) calls
:func:`collective_result` from its launch with the instruction, the operand values and the
:class:`~hlort.plugin.base.launch_context.LaunchContext` it was given: the groups follow the
instruction's mode (:mod:`hlort.ir.collective_groups`), the values meet at the execution's
:class:`~hlort.plugin.base.launch_context.Rendezvous`, and the result is what the interpreter
computes (:mod:`hlort.interpreter.collective_semantics`), so every backend agrees with the
oracle bit for bit. A backend with its own transport (modelled links) can use
:func:`participant_groups` and :func:`combine` directly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.interpreter.collective_semantics import (
    SINGLE_COPY,
    Peers,
    combine,
    done_value,
    reduce_values,
    run_collective,
)
from hlort.interpreter.evaluator import Evaluator
from hlort.ir.collective_groups import (
    COLLECTIVE_OPCODES,
    DONE_OPCODES,
    CollectiveOpGroupMode,
    check_counts,
    group_mode,
    participant_groups,
    permute_pairs,
)
from hlort.ir.instruction import Instruction
from hlort.plugin.base.launch_context import LaunchContext, Rendezvous
from hlort.plugin.base.native_reduce import mpi_reducer

__all__ = [
    "COLLECTIVE_OPCODES",
    "DONE_OPCODES",
    "CollectiveOpGroupMode",
    "RendezvousPeers",
    "check_counts",
    "collective_result",
    "combine",
    "done_value",
    "group_mode",
    "participant_groups",
    "peers_for",
    "permute_pairs",
    "reduce_values",
]


class RendezvousPeers:
    """:class:`~hlort.interpreter.collective_semantics.Peers` over a rendezvous: flattened ids
    become device ids through the execution's device assignment."""

    def __init__(self, rendezvous: Rendezvous, device_id: int, flat_id: int):
        self.rendezvous = rendezvous
        self.device_id = device_id
        self.flat_id = flat_id
        self.num_replicas = rendezvous.num_replicas
        self.num_partitions = rendezvous.num_partitions

    def _key(self, instr: Instruction) -> tuple:
        return (instr.name, self.rendezvous.next_step(self.device_id, instr.name))

    def gather(self, instr, group, value):
        devices = [self.rendezvous.device_of(i) for i in group]
        return self.rendezvous.exchange(self._key(instr), self.device_id, value, devices)

    def all_reduce(self, instr, group, value):
        """An all-reduce whose group reaches other processes and whose reducer MPI has
        (:func:`hlort.plugin.base.native_reduce.mpi_native`), through the transport's
        ``all_reduce``: the local members' values folded in group order, then MPI's Allreduce
        across processes.
        None when the group is all here, the reducer or a type is not native, or the transport
        has no ``all_reduce``: the exact path (every value to every member, folded in group
        order) runs.

        Sums and products of floats then follow this order: group order within a process,
        MPI's across processes, rather than the group order. Every member gets the same bits,
        within ``2 (n-1) eps * sum|x|`` elementwise of the group-order fold for n members
        (each order's rounding error is at most ``(n-1) eps * sum|x|``); bitwise equal for
        integers and for two processes with one member each (the one cross-process step is
        commutative)."""
        r = self.rendezvous
        reducer = mpi_reducer(instr)
        if reducer is None or getattr(r.transport, "all_reduce", None) is None:
            return None
        devices = [r.device_of(i) for i in group]
        if all(d in r.local_device_ids for d in devices):
            return None
        values = tuple(np.require(v, requirements="C") for v in value)
        return list(r.all_reduce(self._key(instr), self.device_id, values, devices, reducer))

    def reduce_scatter(self, instr, group, value):
        """A reduce-scatter across processes whose reducer MPI has: MPI's all-reduce
        (:meth:`all_reduce`, its volume and tolerance), then this member's part. None where
        :meth:`all_reduce` is None."""
        totals = self.all_reduce(instr, group, value)
        if totals is None:
            return None
        dim, n, me = instr.attrs["dimensions"][0], len(group), group.index(self.flat_id)
        return [np.require(np.split(t, n, axis=dim)[me], requirements="C") for t in totals]

    def all_to_all(self, instr, group, value):
        """An all-to-all whose group reaches other processes, through the transport's
        ``all_to_all`` (MPI's ``Alltoallv``): each member sends piece i (of its operand split
        along the dimension, or operand i in the tuple form) to member i only, instead of its
        whole operand to everyone. None when the group is all here or the transport has none."""
        r = self.rendezvous
        if getattr(r.transport, "all_to_all", None) is None:
            return None
        devices = [r.device_of(i) for i in group]
        if all(d in r.local_device_ids for d in devices):
            return None
        n = len(group)
        dims = instr.attrs.get("dimensions") or ()
        if dims:
            pieces = [np.require(p, requirements="C") for p in np.split(value[0], n, dims[0])]
        else:
            pieces = [np.require(v, requirements="C") for v in value]
        if any(p.shape != pieces[0].shape or p.dtype != pieces[0].dtype for p in pieces):
            return None  # a tuple form of mixed operands: the general path
        got = r.all_to_all(self._key(instr), self.device_id, pieces, devices)
        if dims:  # piece ``position`` of every member, in group order
            return [np.require(np.concatenate(got, axis=dims[0]), requirements="C")]
        return list(got)  # operand ``position`` of member k is result k

    def send_receive(self, instr, value, send_to, receive_from):
        r = self.rendezvous
        return r.send_receive(
            self._key(instr),
            self.device_id,
            value,
            None if send_to is None else r.device_of(send_to),
            None if receive_from is None else r.device_of(receive_from),
        )


def peers_for(ctx: LaunchContext) -> Peers:
    """The peers of the copy ``ctx`` runs (one copy when the execution has no rendezvous)."""
    if ctx.rendezvous is None:
        return SINGLE_COPY
    return RendezvousPeers(ctx.rendezvous, ctx.device_id, ctx.flat_id)


def collective_result(
    instruction: Instruction,
    operands: Sequence,
    ctx: LaunchContext,
    evaluator: Evaluator | None = None,
):
    """The value of ``instruction`` (a collective or an async start; a done op reads its
    start's value) on the device of ``ctx``. ``evaluator`` runs a reducer computation (one is
    made when None)."""
    if instruction.opcode in DONE_OPCODES:
        return done_value(instruction, operands[0])
    ev = evaluator if evaluator is not None else Evaluator()
    return run_collective(ev, instruction, operands, peers_for(ctx))
