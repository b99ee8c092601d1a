"""Collectives across processes on buffers of any backend: device -> host -> MPI -> host -> device.

Each function takes this process's contributions as ``{global device id: value}`` (a runtime
``hlort.Buffer`` on that device, or a NumPy array) and returns this process's results the same
way: a buffer on the same device for a buffer, an array for an array. Every process of the
group calls the same function in the same order (a per-process call counter names the exchange,
so the n-th call on one process meets the n-th call on the others).

Results are identical on every process. Reductions MPI has natively (sums and products of
f32/f64 and 32/64-bit integers, max/min of signed 32/64-bit integers) go through MPI's
``Allreduce`` (float sums within ``2 (n-1) eps * sum|x|`` of the group-order fold); others
combine the values in group order, as the reference interpreter does, whatever process owns
them. The rest move whole operands (an
all-to-all sends a process's full arrays to each peer, which keeps the pieces it needs; shapes
may differ per device here, so they keep the keyed exchange); they are the semantics compiled
programs' collectives get, reachable without compiling a program.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hlort.distributed.initialize import current
from hlort.errors import InvalidArgument
from hlort.plugin.base.native_reduce import BY_NAME, mpi_native
from hlort.runtime.buffer import Buffer

REDUCTIONS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}

_counter = itertools.count()
_counter_lock = threading.Lock()


def _next_key(name: str) -> tuple[str, str, int]:
    with _counter_lock:
        return ("hlort.distributed", name, next(_counter))


def _to_host(value: Any) -> np.ndarray:
    if isinstance(value, Buffer):
        return value.numpy()  # device -> host (a copy, whatever the backend)
    return np.asarray(value)


def _like(original: Any, array: np.ndarray):
    """``array`` where ``original`` was: a buffer on the same device, or the array itself."""
    if isinstance(original, Buffer):
        return original.device.backend.device_put(array, original.device)  # host -> device
    return array


def _group_of(values: Mapping[int, Any], group: Sequence[int] | None) -> list[int]:
    run = current()
    group = [d.id for d in run.devices()] if group is None else [int(d) for d in group]
    if len(set(group)) != len(group):
        raise InvalidArgument(f"group {group} names a device twice")
    for device_id in group:
        run.table.device(device_id)  # NOT_FOUND for an id outside the run
    return group


def _exchange(name, values, group, timeout_s):
    run = current()
    mine = {d for d in group if run.table.process_of(d) == run.process_index}
    if set(values) != mine:
        raise InvalidArgument(
            f"{name} over devices {group}: this process ({run.process_index}) owns devices "
            f"{sorted(mine)} of the group and must pass exactly those, got {sorted(values)}"
        )
    local = {d: _to_host(values[d]) for d in sorted(mine)}
    return run.transport.exchange(_next_key(name), local, group, timeout_s=timeout_s)


def all_reduce(
    values: Mapping[int, Any],
    op: str = "sum",
    group: Sequence[int] | None = None,
    *,
    timeout_s: float | None = None,
) -> dict[int, Any]:
    """Every device of ``group`` (default: all) gets the reduction of all of their values.

    Where MPI reduces the type natively (:func:`hlort.plugin.base.native_reduce.mpi_native`:
    sum/prod of f32/f64 and 32/64-bit integers, max/min of signed 32/64-bit integers) this
    process's values are folded in group order and MPI's ``Allreduce`` combines the
    processes': float sums then differ from the group-order fold by at most
    ``2 (n-1) eps * sum|x|`` for n devices, the same bits everywhere. Anything else is
    exchanged whole and folded in group order (bit for bit the interpreter's). First, one small
    exchange checks that every member passed the same shape and type and every process the
    same op: INVALID_ARGUMENT naming each process's, on every process, if not."""
    if op not in REDUCTIONS:
        raise InvalidArgument(f"unknown reduction {op!r}; known: {', '.join(REDUCTIONS)}")
    group = _group_of(values, group)
    run = current()
    mine = [d for d in group if run.table.process_of(d) == run.process_index]
    if not mine or set(values) != set(mine):
        raise InvalidArgument(
            f"all_reduce over devices {group}: this process ({run.process_index}) owns devices "
            f"{mine} of the group and must pass exactly those, got {sorted(values)} (a process "
            "with no device in the group does not call it)"
        )
    local = [_to_host(values[d]) for d in mine]
    key = _next_key("all_reduce")
    _check_signatures(run, key, group, op, mine, local, timeout_s)
    if hasattr(run.transport, "all_reduce"):
        first = local[0]
        reducer = BY_NAME[op]
        if mpi_native(reducer, first.dtype):
            total = np.empty(first.shape, first.dtype)
            send = np.require(first, requirements="C") if len(local) == 1 else None
            if send is None:
                reducer.fold_into(local, total)
            total = run.transport.all_reduce(key, total, op, group, timeout_s=timeout_s, send=send)
            return {
                d: _like(v, total if i == 0 else total.copy())
                for i, (d, v) in enumerate((d, values[d]) for d in mine)
            }
    gathered = run.transport.exchange(
        key, dict(zip(mine, local, strict=True)), group, timeout_s=timeout_s
    )
    total = reduce_in_group_order(REDUCTIONS[op], [gathered[d] for d in group])
    return {d: _like(v, total) for d, v in values.items()}


def _signature(op: str, arrays: Sequence[np.ndarray]) -> list[str]:
    """What must agree across the members of an all-reduce: the reduction, then each distinct
    element type and dims of this process's members (``["sum", "f32[3,4]"]``)."""
    from hlort import dtypes

    kinds = {f"{dtypes.from_numpy(a.dtype).name}[{','.join(map(str, a.shape))}]" for a in arrays}
    return [op, *sorted(kinds)]


def _check_signatures(run, key, group, op, mine, local, timeout_s) -> None:
    """INVALID_ARGUMENT on every process, naming each process's reduction, element type and
    shape, when the members do not all pass the same. Checked before the path is chosen: the
    path depends on the type, so mismatched processes would otherwise wait for each other on
    different paths until DEADLINE_EXCEEDED. One small keyed exchange (skipped when the group
    is this process's alone)."""
    said = {run.process_index: _signature(op, local)}
    if {run.table.process_of(d) for d in group} != {run.process_index}:
        sent = {d: np.zeros(0, np.uint8) for d in mine}
        sent[mine[0]] = np.frombuffer(json.dumps(said[run.process_index]).encode(), np.uint8)
        got = run.transport.exchange(key + ("signature",), sent, group, timeout_s=timeout_s)
        for d in group:
            if got[d].size:
                said[run.table.process_of(d)] = json.loads(got[d].tobytes().decode())
    if len({tuple(v) for v in said.values()}) > 1 or any(len(v) != 2 for v in said.values()):
        listed = "; ".join(f"process {p}: {' '.join(said[p])}" for p in sorted(said))
        raise InvalidArgument(
            f"all_reduce over devices {list(group)}: the members passed different reductions, "
            f"element types or shapes ({listed}); every device of the group must pass an array "
            "of one shape and element type, with the same op on every process"
        )


def reduce_in_group_order(combine, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """``combine`` folded left to right (((a0 + a1) + a2) ...): the interpreter's order, so
    every process gets the same bits. A new array; the inputs are left alone."""
    if len(arrays) == 1:
        return arrays[0].copy()
    total = np.asarray(combine(arrays[0], arrays[1]))  # 0-d operands give a NumPy scalar
    for array in arrays[2:]:
        combine(total, array, out=total)
    return total


def all_gather(
    values: Mapping[int, Any],
    axis: int = 0,
    group: Sequence[int] | None = None,
    *,
    timeout_s: float | None = None,
) -> dict[int, Any]:
    """Every device gets the values of the group concatenated along ``axis``, in group order."""
    group = _group_of(values, group)
    gathered = _exchange("all_gather", values, group, timeout_s)
    result = np.concatenate([gathered[d] for d in group], axis=axis)
    return {d: _like(v, result) for d, v in values.items()}


def all_to_all(
    values: Mapping[int, Any],
    split_axis: int = 0,
    concat_axis: int = 0,
    group: Sequence[int] | None = None,
    *,
    timeout_s: float | None = None,
) -> dict[int, Any]:
    """Device ``group[i]`` gets piece ``i`` of every device's value (split evenly along
    ``split_axis``), concatenated along ``concat_axis`` in group order (StableHLO all_to_all)."""
    group = _group_of(values, group)
    gathered = _exchange("all_to_all", values, group, timeout_s)
    count = len(group)
    for device_id, array in gathered.items():
        if array.shape[split_axis] % count:
            raise InvalidArgument(
                f"all_to_all: device {device_id}'s value has shape {list(array.shape)}; its "
                f"dimension {split_axis} ({array.shape[split_axis]}) must divide by the group "
                f"size {count}"
            )
    pieces = {d: np.split(gathered[d], count, axis=split_axis) for d in group}
    position = {d: i for i, d in enumerate(group)}
    return {
        d: _like(v, np.concatenate([pieces[s][position[d]] for s in group], axis=concat_axis))
        for d, v in values.items()
    }


def collective_permute(
    values: Mapping[int, Any],
    pairs: Sequence[tuple[int, int]],
    *,
    timeout_s: float | None = None,
) -> dict[int, Any]:
    """Device ``target`` gets the value of ``source`` for each ``(source, target)`` pair; a
    device that is no target gets zeros of its own value's shape (StableHLO collective_permute).

    Every process passes the values of all its devices that appear in ``pairs``."""
    pairs = [(int(s), int(t)) for s, t in pairs]
    sources = [s for s, _ in pairs]
    targets = [t for _, t in pairs]
    if len(set(sources)) != len(sources) or len(set(targets)) != len(targets):
        raise InvalidArgument(
            f"collective_permute pairs {pairs}: a device is a source or a target twice"
        )
    group = sorted(set(sources) | set(targets))
    group = _group_of(values, group)
    gathered = _exchange("collective_permute", values, group, timeout_s)
    source_of = {t: s for s, t in pairs}
    return {
        d: _like(v, gathered[source_of[d]].copy() if d in source_of else np.zeros_like(_to_host(v)))
        for d, v in values.items()
    }
