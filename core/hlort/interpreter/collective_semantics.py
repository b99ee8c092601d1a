"""What each collective computes, given the values its peers contribute: the NumPy semantics
every backend shares (the interpreter runs them; hlort.plugin.base.collectives gives them to
plugins with the rendezvous of one execution).

A copy of the program meets its peers through a :class:`Peers` object: ``gather`` returns the
values (each a tuple of the operands' arrays) of one group of flattened ids in group order, and
``send_receive`` is collective-permute's point-to-point step. :func:`run_collective` computes
the groups (:mod:`hlort.ir.collective_groups`), talks to the peers and combines, so the
semantics are written once (the StableHLO spec's, which XLA's match):

- all-reduce: the reducer folded over the group's values in group order (every member gets the
  same bits);
- all-gather: the values concatenated along ``dimensions`` in group order;
- reduce-scatter: the all-reduce split along ``dimensions`` into group-size parts, part i to
  member i;
- all-to-all: member i's result is piece i of every member's operand (split along the dimension),
  concatenated in group order; the tuple form gives member i operand i of every member;
- collective-broadcast: the first member's value to every member (copies in no group: zeros);
- collective-permute: the source's value to its target (copies that no pair targets: zeros).

The async starts compute their op at the start (``all-gather-start``: ``(operand, result)``,
``collective-permute-start``: ``(operand, result, contexts...)``); the dones read the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hlort.interpreter.array_calls import call_on_arrays
from hlort.ir import collective_groups as G
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import TupleShape

Values = tuple[np.ndarray, ...]


class Peers(Protocol):
    """The other copies of the program, as one copy sees them."""

    num_replicas: int
    num_partitions: int
    flat_id: int  # this copy: replica * num_partitions + partition

    def gather(self, instr: Instruction, group: Sequence[int], value: Values) -> list[Values]:
        """Every member's value, in ``group`` order (``group`` holds this copy's id)."""
        ...

    def send_receive(
        self, instr: Instruction, value: Values, send_to: int | None, receive_from: int | None
    ) -> Values | None:
        """Send ``value`` to ``send_to`` and return what ``receive_from`` sent (None: nothing)."""
        ...

    # optional: ``all_reduce``, ``reduce_scatter``, ``all_to_all(instr, group, value)``
    # -> list[np.ndarray] | None: the results by a faster route (MPI's own collectives across
    # processes), or None to take ``gather``


class SingleCopy:
    """The peers of a program that runs as one copy (replica 0, partition 0)."""

    num_replicas = 1
    num_partitions = 1
    flat_id = 0

    def gather(self, instr, group, value):
        return [value]

    def send_receive(self, instr, value, send_to, receive_from):
        return value if receive_from == 0 else None


SINGLE_COPY = SingleCopy()


def run_collective(ev, instr: Instruction, operands: Sequence, peers: Peers):
    """The value of collective ``instr`` on the copy ``peers.flat_id`` (a start's tuple too)."""
    op = G.sync_opcode(instr.opcode)
    values: Values = tuple(np.asarray(v) for v in operands)
    if op is Opcode.COLLECTIVE_PERMUTE:
        result = _permute(instr, values, peers)[0]
    else:
        groups = G.participant_groups(instr, peers.num_replicas, peers.num_partitions)
        group = next((g for g in groups if peers.flat_id in g), None)
        if group is None:  # collective-broadcast leaving this copy out
            results = [np.zeros_like(v) for v in values]
        else:
            results = None
            if op is Opcode.ALL_REDUCE and hasattr(peers, "all_reduce"):
                results = peers.all_reduce(instr, group, values)
            elif op is Opcode.ALL_TO_ALL and hasattr(peers, "all_to_all"):
                results = peers.all_to_all(instr, group, values)
            elif op is Opcode.REDUCE_SCATTER and hasattr(peers, "reduce_scatter"):
                results = peers.reduce_scatter(instr, group, values)
            if results is None:
                gathered = peers.gather(instr, group, values)
                results = combine(ev, instr, gathered, group.index(peers.flat_id))
        result = results[0] if _single(instr, op) else tuple(results)
    if instr.opcode is Opcode.ALL_GATHER_START:
        return (values[0] if len(values) == 1 else values, result)
    if instr.opcode is Opcode.COLLECTIVE_PERMUTE_START:
        contexts = tuple(np.zeros((), e.dtype.numpy) for e in instr.shape.elements[2:])
        return (values[0], result, *contexts)
    return result


def done_value(instr: Instruction, start_value):
    """What a done op gives for its start's value."""
    if instr.opcode is Opcode.ALL_REDUCE_DONE:
        return start_value
    return start_value[1]


def _single(instr: Instruction, op: Opcode) -> bool:
    """Whether the op's value is one array (not a tuple of results)."""
    shape = instr.shape
    if instr.opcode is Opcode.ALL_GATHER_START:
        shape = shape.elements[1]
    return not isinstance(shape, TupleShape)


def combine(ev, instr: Instruction, gathered: list[Values], position: int) -> list[np.ndarray]:
    """The results of member ``position`` of a group whose members contributed ``gathered``."""
    op = G.sync_opcode(instr.opcode)
    n = len(gathered)
    count = len(gathered[0])
    if op is Opcode.ALL_REDUCE:
        return [reduce_values(ev, instr, [g[k] for g in gathered]) for k in range(count)]
    if op is Opcode.ALL_GATHER:
        dim = instr.attrs["dimensions"][0]
        return [np.concatenate([g[k] for g in gathered], axis=dim) for k in range(count)]
    if op is Opcode.REDUCE_SCATTER:
        dim = instr.attrs["dimensions"][0]
        out = []
        for k in range(count):
            total = reduce_values(ev, instr, [g[k] for g in gathered])
            out.append(_contiguous(np.split(total, n, axis=dim)[position]))
        return out
    if op is Opcode.ALL_TO_ALL:
        dims = instr.attrs.get("dimensions") or ()
        if not dims:  # tuple form: result k = operand `position` of member k
            return [np.asarray(g[position]) for g in gathered]
        d = dims[0]
        pieces = [np.split(g[0], n, axis=d)[position] for g in gathered]
        return [_contiguous(np.concatenate(pieces, axis=d))]
    if op is Opcode.COLLECTIVE_BROADCAST:
        return [np.array(v, copy=True) for v in gathered[0]]
    raise NotImplementedError(op)


def reduce_values(ev, instr: Instruction, values: list[np.ndarray]) -> np.ndarray:
    """``to_apply`` folded over ``values`` in order: ``f(f(v0, v1), v2)...``."""
    comp = instr.attrs["to_apply"]
    acc = values[0]
    for v in values[1:]:
        acc = call_on_arrays(ev, comp, [acc, v], acc.shape)[0]
    return np.ascontiguousarray(acc).reshape(acc.shape)


def _permute(instr: Instruction, values: Values, peers: Peers) -> Values:
    pairs = G.permute_pairs(instr, peers.num_replicas, peers.num_partitions)
    me = peers.flat_id
    send_to = next((t for s, t in pairs if s == me), None)
    receive_from = next((s for s, t in pairs if t == me), None)
    got = peers.send_receive(instr, values, send_to, receive_from)
    if got is None:
        return tuple(np.zeros_like(v) for v in values)
    return tuple(np.array(v, copy=True) for v in got)


def _contiguous(x) -> np.ndarray:
    """C-contiguous with its rank kept (np.ascontiguousarray makes 0-d arrays 1-d)."""
    return np.require(x, requirements="C")
