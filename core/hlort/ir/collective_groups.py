"""Who talks to whom in a collective: XLA's CollectiveOpGroupMode and participant groups.

A program runs as ``num_replicas x num_partitions`` copies; copy ``(r, p)`` has the *flattened
id* ``r * num_partitions + p`` (the StableHLO spec's process id order, and the row-major order
of a device assignment). An instruction's ``replica_groups`` name replica ids, partition ids or
flattened ids depending on its mode, which follows from ``channel_id`` and
``use_global_device_ids`` as XLA defines it (``GetCollectiveOpGroupMode``):

================  =====================  ===========================  ===============
channel_id        use_global_device_ids  ops that have the attribute  ops without it
================  =====================  ===========================  ===============
absent (or <= 0)  false                  cross-replica                cross-replica
set               false                  cross-replica-and-partition  cross-partition
set               true                   flattened-id                 (not allowed)
absent            true                   invalid                      (not allowed)
================  =====================  ===========================  ===============

(all-reduce, all-gather and reduce-scatter and their async starts have the attribute; all-to-all,
collective-permute and collective-broadcast do not.) This module turns that into lists of
flattened ids, each list in the order the participants' values are combined, and checks groups
against the number of replicas and partitions (INVALID_ARGUMENT naming the instruction).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from hlort.errors import InvalidArgument
from hlort.ir.attributes import IotaReplicaGroupList
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


class CollectiveOpGroupMode(enum.Enum):
    CROSS_REPLICA = "cross-replica"
    CROSS_PARTITION = "cross-partition"
    CROSS_REPLICA_AND_PARTITION = "cross-replica-and-partition"
    FLATTENED_ID = "flattened-id"


_SYNC = {
    Opcode.ALL_REDUCE_START: Opcode.ALL_REDUCE,
    Opcode.ALL_GATHER_START: Opcode.ALL_GATHER,
    Opcode.COLLECTIVE_PERMUTE_START: Opcode.COLLECTIVE_PERMUTE,
}
DONE_OPCODES = frozenset(
    {Opcode.ALL_REDUCE_DONE, Opcode.ALL_GATHER_DONE, Opcode.COLLECTIVE_PERMUTE_DONE}
)
GROUPED_OPCODES = frozenset(
    {
        Opcode.ALL_REDUCE,
        Opcode.ALL_GATHER,
        Opcode.REDUCE_SCATTER,
        Opcode.ALL_TO_ALL,
        Opcode.COLLECTIVE_BROADCAST,
        Opcode.ALL_REDUCE_START,
        Opcode.ALL_GATHER_START,
    }
)
"""Collectives with ``replica_groups``."""
PERMUTE_OPCODES = frozenset({Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START})
COLLECTIVE_OPCODES = GROUPED_OPCODES | PERMUTE_OPCODES | DONE_OPCODES
"""Every op that communicates between the copies of a program (the done ops included)."""
_HAS_GLOBAL_IDS = frozenset(
    {
        Opcode.ALL_REDUCE,
        Opcode.ALL_GATHER,
        Opcode.REDUCE_SCATTER,
        Opcode.ALL_REDUCE_START,
        Opcode.ALL_GATHER_START,
    }
)
UNIFORM_GROUPS = frozenset(
    {Opcode.ALL_GATHER, Opcode.ALL_GATHER_START, Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL}
)
"""Ops whose groups must all have one size (the result shape depends on it)."""


def sync_opcode(opcode: Opcode) -> Opcode:
    """The synchronous op an async start computes (``all-reduce-start`` -> ``all-reduce``)."""
    return _SYNC.get(opcode, opcode)


def has_channel(instr: Instruction) -> bool:
    channel = instr.attrs.get("channel_id")
    return channel is not None and channel > 0


def group_mode(instr: Instruction) -> CollectiveOpGroupMode:
    """The mode of ``instr`` (table in the module docstring); INVALID_ARGUMENT for
    use_global_device_ids without a channel_id."""
    channel = has_channel(instr)
    global_ids = bool(instr.attrs.get("use_global_device_ids", False))
    if global_ids and (not channel or instr.opcode not in _HAS_GLOBAL_IDS):
        raise _bad(
            instr,
            "use_global_device_ids=true needs a channel_id (XLA's flattened-id mode); add "
            "channel_id=1 or drop use_global_device_ids",
        )
    if not channel:
        return CollectiveOpGroupMode.CROSS_REPLICA
    if instr.opcode not in _HAS_GLOBAL_IDS:
        return CollectiveOpGroupMode.CROSS_PARTITION
    if global_ids:
        return CollectiveOpGroupMode.FLATTENED_ID
    return CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION


def replica_groups(instr: Instruction) -> tuple[tuple[int, ...], ...]:
    """The explicit groups of ``instr`` (the iota form expanded; () when none are given)."""
    value = instr.attrs.get("replica_groups", ())
    if isinstance(value, IotaReplicaGroupList):
        return value.groups()
    return tuple(tuple(int(i) for i in g) for g in value)


def check_groups_form(instr: Instruction) -> None:
    """Checks that need no replica or partition count: ids >= 0, each id in one group only,
    equal sizes where the result shape depends on the size, flattened-id groups given,
    source/target pairs with each source and each target once."""
    mode = group_mode(instr)
    if instr.opcode in PERMUTE_OPCODES:
        pairs = instr.attrs.get("source_target_pairs", ())
        for name, column in (("source", 0), ("target", 1)):
            ids = [int(p[column]) for p in pairs]
            _no_duplicates(instr, ids, f"{name} in source_target_pairs")
        if any(len(p) != 2 or min(p) < 0 for p in pairs):
            raise _bad(instr, f"source_target_pairs {_text(pairs)} must be pairs of ids >= 0")
        return
    if instr.opcode not in GROUPED_OPCODES:
        return
    value = instr.attrs.get("replica_groups", ())
    if isinstance(value, IotaReplicaGroupList):
        _check_iota(instr, value)
    groups = replica_groups(instr)
    flat = [i for g in groups for i in g]
    if any(i < 0 for i in flat):
        raise _bad(instr, f"replica_groups {_text(groups)} has a negative id")
    if any(not g for g in groups):
        raise _bad(instr, f"replica_groups {_text(groups)} has an empty group")
    _no_duplicates(instr, flat, "in replica_groups")
    if instr.opcode in UNIFORM_GROUPS and len({len(g) for g in groups}) > 1:
        raise _bad(
            instr,
            f"replica_groups {_text(groups)} have different sizes; {instr.opcode.value} needs "
            f"groups of one size",
        )
    if mode is CollectiveOpGroupMode.FLATTENED_ID and not groups:
        raise _bad(instr, "flattened-id mode (use_global_device_ids=true) needs replica_groups")


def participant_groups(
    instr: Instruction, num_replicas: int, num_partitions: int
) -> list[tuple[int, ...]]:
    """The groups of flattened ids that combine their values, each in combining order.

    A copy of the program in no group (possible only when explicit groups leave it out, which
    :func:`check_counts` refuses for ops other than collective-broadcast) takes part in none.
    """
    check_counts(instr, num_replicas, num_partitions)
    groups = replica_groups(instr)
    mode = group_mode(instr)
    P = num_partitions
    if mode is CollectiveOpGroupMode.FLATTENED_ID:
        return [tuple(g) for g in groups]
    if mode is CollectiveOpGroupMode.CROSS_PARTITION:
        rows = groups or (tuple(range(num_partitions)),)
        return [tuple(r * P + p for p in g) for r in range(num_replicas) for g in rows]
    rows = groups or (tuple(range(num_replicas)),)
    if mode is CollectiveOpGroupMode.CROSS_REPLICA:
        return [tuple(r * P + p for r in g) for p in range(num_partitions) for g in rows]
    # cross-replica-and-partition: every partition of the listed replicas, partition-major
    # (the StableHLO spec's order, as XLA's GetParticipatingDevices builds it)
    return [tuple(r * P + p for p in range(num_partitions) for r in g) for g in rows]


def permute_pairs(
    instr: Instruction, num_replicas: int, num_partitions: int
) -> list[tuple[int, int]]:
    """collective-permute's (source, target) pairs as flattened ids: replica ids within each
    partition (no channel_id), partition ids within each replica (with one)."""
    check_counts(instr, num_replicas, num_partitions)
    pairs = [(int(s), int(t)) for s, t in instr.attrs.get("source_target_pairs", ())]
    P = num_partitions
    if group_mode(instr) is CollectiveOpGroupMode.CROSS_PARTITION:
        return [(r * P + s, r * P + t) for r in range(num_replicas) for s, t in pairs]
    return [(s * P + p, t * P + p) for p in range(num_partitions) for s, t in pairs]


def group_size(instr: Instruction, num_replicas: int, num_partitions: int) -> int:
    """The number of participants in each group (uniform-group ops)."""
    groups = participant_groups(instr, num_replicas, num_partitions)
    return len(groups[0]) if groups else 1


def static_group_size(instr_attrs: dict, opcode: Opcode) -> int | None:
    """The group size when the attributes alone give it (explicit groups in a mode whose ids
    are the participants), else None (shape rules use it when no result shape is declared)."""
    value = instr_attrs.get("replica_groups", ())
    if isinstance(value, IotaReplicaGroupList):
        size = value.group_size
    elif value:
        size = len(value[0])
    else:
        return None
    channel = (instr_attrs.get("channel_id") or 0) > 0
    if channel and opcode in _HAS_GLOBAL_IDS and not instr_attrs.get("use_global_device_ids"):
        return None  # cross-replica-and-partition: times the partition count
    return size


def check_counts(instr: Instruction, num_replicas: int, num_partitions: int) -> None:
    """INVALID_ARGUMENT when the ids of ``instr`` do not fit ``num_replicas x num_partitions``
    (XLA's verifier: in range, and groups that cover every id when given, except
    collective-broadcast whose uncovered copies get zeros)."""
    check_groups_form(instr)
    mode = group_mode(instr)
    bound = {
        CollectiveOpGroupMode.CROSS_REPLICA: (num_replicas, "replica"),
        CollectiveOpGroupMode.CROSS_PARTITION: (num_partitions, "partition"),
        CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION: (num_replicas, "replica"),
        CollectiveOpGroupMode.FLATTENED_ID: (num_replicas * num_partitions, "flattened"),
    }[mode]
    count, kind = bound
    where = f"{num_replicas} replica(s) x {num_partitions} partition(s)"
    groups: tuple[tuple[int, ...], ...] = ()
    if instr.opcode in PERMUTE_OPCODES:
        ids = [int(i) for p in instr.attrs.get("source_target_pairs", ()) for i in p]
    else:
        groups = replica_groups(instr)
        ids = [i for g in groups for i in g]
    bad = sorted({i for i in ids if i >= count})
    if bad:
        raise _bad(
            instr,
            f"{kind} id(s) {bad} out of range in {mode.value} mode: the program runs as "
            f"{where} (ids 0..{count - 1}); set replica_count/num_partitions in the HloModule "
            f"header or the compile options",
        )
    if groups and instr.opcode is not Opcode.COLLECTIVE_BROADCAST and len(ids) != count:
        raise _bad(
            instr,
            f"replica_groups {_text(groups)} ({mode.value} mode) must cover all {count} "
            f"{kind} id(s) of {where}; list every id once",
        )
    if sync_opcode(instr.opcode) in (Opcode.ALL_GATHER, Opcode.REDUCE_SCATTER, Opcode.ALL_TO_ALL):
        _check_group_size_fits(instr, num_replicas, num_partitions, where)


def _check_group_size_fits(instr: Instruction, replicas: int, partitions: int, where: str) -> None:
    """The result dims all-gather / reduce-scatter declare, and all-to-all's split, against
    the group size these counts give."""
    groups = replica_groups(instr)
    mode = group_mode(instr)
    if mode is CollectiveOpGroupMode.FLATTENED_ID:
        size = len(groups[0])
    elif mode is CollectiveOpGroupMode.CROSS_PARTITION:
        size = len(groups[0]) if groups else partitions
    else:
        size = len(groups[0]) if groups else replicas
        if mode is CollectiveOpGroupMode.CROSS_REPLICA_AND_PARTITION:
            size *= partitions
    op = sync_opcode(instr.opcode)
    dims = instr.attrs.get("dimensions") or ()
    if not dims:
        return
    dim = dims[0]
    shape = instr.shape.elements[1] if instr.opcode is Opcode.ALL_GATHER_START else instr.shape
    results = shape.leaf_shapes()
    for operand, result in zip(instr.operands, results, strict=False):
        n = operand.shape.dims[dim]
        want = n * size if op is Opcode.ALL_GATHER else n if op is Opcode.ALL_TO_ALL else None
        if op is Opcode.REDUCE_SCATTER or op is Opcode.ALL_TO_ALL:
            if n % size:
                raise _bad(
                    instr,
                    f"dimension {dim} of {operand.shape} does not split into the group size "
                    f"{size} ({mode.value} mode, {where})",
                )
            if op is Opcode.REDUCE_SCATTER:
                want = n // size
        if result.dims[dim] != want:
            raise _bad(
                instr,
                f"result {result} needs dimension {dim} = {want} for groups of {size} "
                f"({mode.value} mode, {where})",
            )


def _check_iota(instr: Instruction, value: IotaReplicaGroupList) -> None:
    import math

    n = value.num_groups * value.group_size
    if math.prod(value.reshape_dims) != n:
        raise _bad(
            instr,
            f"iota replica_groups [{value.num_groups},{value.group_size}]<="
            f"{list(value.reshape_dims)}: the reshape dims must hold {n} ids",
        )
    perm = value.transpose_perm
    if perm and sorted(perm) != list(range(len(value.reshape_dims))):
        raise _bad(instr, f"iota replica_groups: T{tuple(perm)} is not a permutation")


def _no_duplicates(instr: Instruction, ids: Sequence[int], what: str) -> None:
    seen: set[int] = set()
    for i in ids:
        if i in seen:
            raise _bad(instr, f"id {i} appears twice {what}; each id may appear once")
        seen.add(i)


def _text(groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def _bad(instr: Instruction, message: str) -> InvalidArgument:
    return InvalidArgument(f"{instr.opcode.value} {instr.name}: {message}")


def check_module_collectives(module) -> None:
    """The verifier's check of every collective against the module's replica and partition
    counts, when its header states them (otherwise the compile checks against its options)."""
    if not any(k in module.attributes for k in ("replica_count", "num_replicas", "num_partitions")):
        return
    replicas = int(module.config.get("num_replicas", 1))
    partitions = int(module.config.get("num_partitions", 1))
    check_collectives_fit(module, replicas, partitions)


def check_collectives_fit(module, replicas: int, partitions: int) -> None:
    """INVALID_ARGUMENT naming the first collective whose groups or pairs do not fit
    ``replicas x partitions`` (the compile's check, with the counts it compiles for)."""
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode in GROUPED_OPCODES or instr.opcode in PERMUTE_OPCODES:
                try:
                    check_counts(instr, replicas, partitions)
                except InvalidArgument as err:
                    raise InvalidArgument(f"in computation {comp.name}: {err.message}") from None
