"""Rank checks of operands that differ across processes (tests/distributed/rank_program.py runs
them): a compiled program whose collectives have another shape or type on process 0 than on
the others, and the transport's keyed exchange (an MPI without MPI_THREAD_MULTIPLE) given the
same. Each must be INVALID_ARGUMENT naming both sides on every process, within its timeout,
and the next collective must still work."""

from __future__ import annotations

import time

import numpy as np
from rank_helpers import DEVICES_PER_RANK, _rank_size, _value, _within_fold

from hlort.errors import HlortError

_ADD = "add {{ a = {t}[] parameter(0)\n b = {t}[] parameter(1)\n ROOT c = {t}[] add(a, b) }}\n"
_OPS = {
    "all_reduce": "all-reduce(x), replica_groups={{}}, to_apply=add",
    "all_gather": "all-gather(x), replica_groups={{}}, dimensions={{0}}",
    "all_to_all": "all-to-all(x), replica_groups={{}}, dimensions={{0}}",
}


def _collective(kind: str, dtype: str, n: int, replicas: int) -> str:
    out = n * replicas if kind == "all_gather" else n
    return (
        f"HloModule {kind}, replica_count={replicas}\n"  # one name: the processes' key
        + _ADD.format(t=dtype)
        + f"ENTRY main {{ x = {dtype}[{n}] parameter(0)\n"
        + f" ROOT y = {dtype}[{out}] {_OPS[kind].format()} }}\n"
    )


def _run(kind: str, dtype: str, n: int) -> list:
    """[code, message, seconds] of running ``kind`` on this process's devices (None code: it
    ran), or the results when it ran."""
    import hlort.distributed as hd

    replicas = len(hd.devices())
    exe = hd.compile(_collective(kind, dtype, n, replicas))
    numpy_type = np.float32 if dtype == "f32" else np.int32
    args = [[_value(d.id, (n,)).astype(numpy_type)] for d in hd.addressable_devices()]
    started = time.monotonic()
    try:
        values = [o[0].numpy().tolist() for o in exe.execute_sharded(args)]
    except HlortError as err:
        return [err.code.name, err.message, time.monotonic() - started]
    return [None, values, time.monotonic() - started]


def check_compiled_mismatch(out: dict) -> None:
    """Process 0's program has f32[16] (or s32[8]) operands, the others' f32[8]: every
    collective kind MPI runs natively (Iallreduce, Iallgatherv, Ialltoallv)."""
    import hlort.distributed as hd

    hd.initialize("interpreter")
    first = hd.process_index() == 0
    cases = {
        "shape_all_reduce": ("all_reduce", "f32", 16 if first else 8),
        "type_all_reduce": ("all_reduce", "s32" if first else "f32", 8),
        # past the check's inline values on process 0 only: two paths, one check
        "size_all_reduce": ("all_reduce", "f32", 4096 if first else 8),
        "shape_all_gather": ("all_gather", "f32", 16 if first else 8),
        "shape_all_to_all": ("all_to_all", "f32", 16 if first else 8),
    }
    for name, case in cases.items():
        out[name] = _run(*case)
    # the group is still usable: a matching all-reduce afterwards is right
    code, values, _ = _run("all_reduce", "f32", 8)
    everyone = [d.id for d in hd.devices()]
    out["after"] = code is None and all(
        _within_fold(np.array(v, np.float32), [_value(d, (8,)) for d in everyone]) for v in values
    )


def check_serialized_mismatch(out: dict) -> None:
    """The keyed exchange of an MPI that gives only MPI_THREAD_SERIALIZED: an all-gather and an
    all-to-all whose parts are f32[4] on process 0 and f32[2] on the others."""
    from hlort.distributed.transport import MpiTransport

    MPI, rank, size = _rank_size()
    transport = MpiTransport(
        MPI.COMM_WORLD.Dup(), lambda d: d // DEVICES_PER_RANK, thread_multiple=False
    )
    group = list(range(0, size * DEVICES_PER_RANK, DEVICES_PER_RANK))  # one device a process
    me = rank * DEVICES_PER_RANK
    n = 4 if rank == 0 else 2
    calls = {
        "all_gather": lambda: transport.all_gather(
            ("mg",), {me: np.ones(n, np.float32)}, group, timeout_s=30
        ),
        "all_to_all": lambda: transport.all_to_all(
            ("ma",), {me: [np.ones(n, np.float32)] * len(group)}, group, timeout_s=30
        ),
    }
    for name, call in calls.items():
        try:
            call()
            out[name] = None
        except HlortError as err:
            out[name] = [err.code.name, err.message]
