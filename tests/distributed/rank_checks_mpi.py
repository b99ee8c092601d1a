"""Rank checks of MPI's own collectives (tests/distributed/rank_program.py runs them): the
transport's Iallreduce / Iallgatherv / Ialltoallv, a rank missing an MPI all-reduce, and
programs whose collectives cross processes through them (all-to-all forms, reduce-scatter,
all-reduces MPI cannot do)."""

from __future__ import annotations

import threading
import time

import numpy as np
from rank_helpers import (
    DEVICES_PER_RANK,
    _digest,
    _rank_size,
    _synthetic_transport,
    _value,
    _within_fold,
    mine_of,
    run_threads,
)

from hlort import dtypes
from hlort.errors import HlortError


def check_mpi_collectives(out: dict) -> None:
    """The transport's MPI collectives (Iallreduce / Iallgatherv on per-group communicators):
    two groups at once from two threads, integer types exact, all-gather bit for bit."""
    transport, rank, size = _synthetic_transport()
    everyone = list(range(size * DEVICES_PER_RANK))
    results: dict = {}
    errors: list = []

    def device_thread(device_id: int):
        try:
            group = [d for d in everyone if d % DEVICES_PER_RANK == device_id % DEVICES_PER_RANK]
            for step in range(20):
                total = _value(device_id, (1000,)) + step  # this process's one member
                got = transport.all_reduce(("ar", step), total.copy(), "sum", group)
                ok = _within_fold(got, [_value(d, (1000,)) + step for d in group])
                results.setdefault(device_id, []).append([ok, _digest(got)])
        except Exception as err:  # reported, not swallowed: the test asserts on it
            errors.append(f"{device_id}: {err}")

    threads = [threading.Thread(target=device_thread, args=(d,)) for d in mine_of(rank)]
    run_threads(threads, out, errors)
    out["within_fold"] = all(ok for v in results.values() for ok, _ in v) and len(results) == 2
    # digests by group parity and step: the test compares them across ranks
    out["digests"] = {str(d % 2): [dg for _, dg in v] for d, v in results.items()}
    exact = {}
    firsts = [mine_of(r)[0] for r in range(size)]
    for name in ("u32", "s32", "s64", "u64"):
        dtype = dtypes.from_hlo_name(name).numpy
        info = np.iinfo(dtype)
        values = {
            d: np.random.default_rng(d).integers(info.min, info.max, 64, dtype, endpoint=True)
            for d in firsts
        }
        got = transport.all_reduce(("int", name), values[firsts[rank]].copy(), "sum", firsts)
        with np.errstate(all="ignore"):
            expect = values[firsts[0]].copy()
            for d in firsts[1:]:
                expect = (expect + values[d]).astype(dtype)  # wraps, as the interpreter's
        exact[name] = bool(got.dtype == dtype and np.array_equal(got, expect))
        if name[0] == "s":  # MPI max/min of unsigned types is not trusted (native_reduce)
            got = transport.all_reduce(("max", name), values[firsts[rank]].copy(), "max", firsts)
            expect = np.max(list(values.values()), axis=0)
            exact[name + " max"] = bool(np.array_equal(got, expect))
    out["integers_exact"] = exact
    gathered = transport.all_gather(
        ("ag", 2), {d: _value(d, (5, 3)) for d in mine_of(rank)}, everyone
    )
    one = transport.all_gather(("ag", 1), {firsts[rank]: _value(firsts[rank], (7,))}, firsts)
    out["all_gather_exact"] = [
        list(gathered) == everyone
        and all(np.array_equal(gathered[d], _value(d, (5, 3))) for d in everyone),
        list(one) == firsts and all(np.array_equal(one[d], _value(d, (7,))) for d in firsts),
    ]


def check_mpi_deadline(out: dict) -> None:
    """A rank that never joins an MPI all-reduce: a group's first collective times out in the
    bounded handshake (naming the process); a later one in the MPI call itself, which retires
    the group (ABORTED after), and the late rank's call completes the abandoned ones."""
    transport, rank, size = _synthetic_transport()
    last = size - 1
    firsts = [mine_of(r)[0] for r in range(size)]
    fresh = [mine_of(r)[1] for r in range(size)]

    def reduce(group, step, timeout_s):
        x = np.full(16, float(rank), np.float32)
        return transport.all_reduce(("dl", step), x, "sum", group, timeout_s=timeout_s)

    out["warm"] = bool(np.all(reduce(firsts, 0, 60) == sum(range(size))))
    if rank != last:
        for name, group in (("handshake", fresh), ("in_mpi", firsts)):
            started = time.monotonic()
            try:
                reduce(group, 1, 1.0)
                out[name] = None
            except HlortError as err:
                out[name] = [err.code.name, err.message, round(time.monotonic() - started, 2)]
    transport.barrier(timeout_s=60, what="after the MPI deadline check")
    if rank == last:  # meets the others' abandoned call on the firsts' communicator
        out["late_sum"] = bool(np.all(reduce(firsts, 1, 60) == sum(range(size))))
    else:
        try:
            reduce(firsts, 2, 60)
            out["retired"] = None
        except HlortError as err:
            out["retired"] = [err.code.name, err.message]
    if rank == last:  # late for the group the others gave up on in its handshake: bounded
        started = time.monotonic()
        try:
            reduce(fresh, 1, 1.0)
            out["late_handshake"] = None
        except HlortError as err:
            out["late_handshake"] = [err.code.name, err.message, time.monotonic() - started]
    transport.barrier(timeout_s=60, what="at the end of the MPI deadline check")
    out["rejoined"] = True


def check_serialized_groups(out: dict) -> None:
    """An MPI without MPI_THREAD_MULTIPLE (one lock around every call): two device threads per
    process run collectives over two groups, started in opposite orders on even and odd ranks.
    No communicator is created (a blocking creation under the lock could deadlock); the keyed
    exchange gives the same results on every process."""
    from hlort.distributed.transport import MpiTransport

    MPI, rank, size = _rank_size()
    transport = MpiTransport(
        MPI.COMM_WORLD.Dup(), lambda d: d // DEVICES_PER_RANK, thread_multiple=False
    )
    everyone = list(range(size * DEVICES_PER_RANK))
    results: dict = {}
    errors: list = []

    def device_thread(device_id: int, delay: float):
        time.sleep(delay)
        try:
            k = device_id % DEVICES_PER_RANK
            group = [d for d in everyone if d % DEVICES_PER_RANK == k]
            found = []
            for step in range(3):
                total = _value(device_id, (50,)) + step
                got = transport.all_reduce(("sr", step), total.copy(), "sum", group, timeout_s=30)
                found.append(_within_fold(got, [_value(d, (50,)) + step for d in group]))
                ints = np.arange(6, dtype=np.int32) * (device_id + 1)
                got = transport.all_reduce(("si", step), ints, "max", group, timeout_s=30)
                want = np.arange(6, dtype=np.int32) * (max(group) + 1)
                found.append(bool(got.dtype == np.int32 and np.array_equal(got, want)))
            gathered = transport.all_gather(
                ("sg", k), {device_id: _value(device_id, (2, 3))}, group, timeout_s=30
            )
            found.append(all(np.array_equal(gathered[d], _value(d, (2, 3))) for d in group))
            pieces = [np.full(2, 10 * device_id + i, np.float32) for i in range(len(group))]
            swapped = transport.all_to_all(("sa", k), {device_id: pieces}, group, timeout_s=30)
            position = group.index(device_id)
            found.append(
                all(
                    np.array_equal(swapped[device_id][i], np.full(2, 10 * j + position))
                    for i, j in enumerate(group)
                )
            )
            results[device_id] = found
        except Exception as err:  # reported, not swallowed: the test asserts on it
            errors.append(f"{device_id}: {type(err).__name__}: {err}")

    mine = mine_of(rank)
    delays = [0.0, 0.3] if rank % 2 == 0 else [0.3, 0.0]  # opposite orders
    threads = [
        threading.Thread(target=device_thread, args=a) for a in zip(mine, delays, strict=True)
    ]
    run_threads(threads, out, errors)
    out["all_ok"] = len(results) == 2 and all(all(v) for v in results.values())
    out["communicators_made"] = len(transport._groups._comms)
    out["results"] = {str(d): v for d, v in results.items()}


def _reduce_scatter(mine, replicas: int) -> dict:
    """Reduce-scatter across processes: MPI's all-reduce then this member's part (f32: the
    stated tolerance; s32: exact)."""
    import hlort.distributed as hd

    n = replicas
    text = f"""HloModule rs, replica_count={n}
addf {{ a = f32[] parameter(0)
 b = f32[] parameter(1)
 ROOT c = f32[] add(a, b) }}
addi {{ a = s32[] parameter(0)
 b = s32[] parameter(1)
 ROOT c = s32[] add(a, b) }}
ENTRY main {{
 f = f32[3,{4 * n}] parameter(0)
 i = s32[{2 * n}] parameter(1)
 rf = f32[3,4] reduce-scatter(f), replica_groups={{}}, dimensions={{1}}, to_apply=addf
 ri = s32[2] reduce-scatter(i), replica_groups={{}}, dimensions={{0}}, to_apply=addi
 ROOT t = (f32[3,4], s32[2]) tuple(rf, ri)
}}
"""
    f = {j: _value(200 + j, (3, 4 * n)) for j in range(n)}
    i = {j: np.random.default_rng(j).integers(-(2**31), 2**31, 2 * n, np.int32) for j in range(n)}
    with np.errstate(all="ignore"):
        total_i = i[0].copy()
        for j in range(1, n):
            total_i = (total_i + i[j]).astype(np.int32)
    exe = hd.compile(text)
    results = exe.execute_sharded([[f[d.id], i[d.id]] for d in mine])
    found = {}
    for d, (rf, ri) in zip(mine, results, strict=True):
        k = d.id
        found[str(k)] = [
            _within_fold(rf.numpy(), [f[j][:, 4 * k : 4 * k + 4] for j in range(n)]),
            ri.numpy().tobytes() == total_i[2 * k : 2 * k + 2].tobytes(),
        ]
    return found


def _all_to_all_forms(mine, replicas: int) -> dict:
    """All-to-all across processes (MPI's Alltoallv): split along dimension 1 of a 2-d s32
    operand, and the tuple form (operand i to replica i), bit for bit."""
    import hlort.distributed as hd

    n = replicas
    tuple_shape = "(" + ", ".join(["f32[3]"] * n) + ")"
    params = "\n".join(f" t{k} = f32[3] parameter({k + 1})" for k in range(n))
    text = f"""HloModule a2a, replica_count={n}
ENTRY main {{
 x = s32[2,{2 * n}] parameter(0)
{params}
 a = s32[2,{2 * n}] all-to-all(x), replica_groups={{}}, dimensions={{1}}
 b = {tuple_shape} all-to-all({", ".join(f"t{k}" for k in range(n))}), replica_groups={{}}
 ROOT r = (s32[2,{2 * n}], {tuple_shape}) tuple(a, b)
}}
"""
    x = {j: np.arange(4 * n, dtype=np.int32).reshape(2, 2 * n) + 1000 * j for j in range(n)}
    t = {j: [_value(100 * j + k, (3,)) for k in range(n)] for j in range(n)}
    exe = hd.compile(text)
    results = exe.execute_sharded([[x[d.id], *t[d.id]] for d in mine])
    found = {}
    for d, outs in zip(mine, results, strict=True):
        a, *b = (o.numpy() for o in outs)
        i = d.id
        want_a = np.concatenate([x[j][:, 2 * i : 2 * i + 2] for j in range(n)], axis=1)
        found[str(i)] = [
            a.tobytes() == want_a.tobytes(),
            all(b[j].tobytes() == t[j][i].tobytes() for j in range(n)),
        ]
    return found


def _exact_program(replicas: int) -> str:
    """All-reduces MPI cannot do natively (bf16; a reducer computation that is not one op,
    ``a + 2b``, folded ``f(f(x0, x1), x2)``...) and one it does exactly (s32, wrapping)."""
    return f"""HloModule exact_paths, replica_count={replicas}
addbf {{ a = bf16[] parameter(0)
 b = bf16[] parameter(1)
 ROOT c = bf16[] add(a, b) }}
custom {{ a = f32[] parameter(0)
 b = f32[] parameter(1)
 two = f32[] constant(2)
 m = f32[] multiply(b, two)
 ROOT c = f32[] add(a, m) }}
addi {{ a = s32[] parameter(0)
 b = s32[] parameter(1)
 ROOT c = s32[] add(a, b) }}
ENTRY main {{
 h = bf16[64] parameter(0)
 f = f32[64] parameter(1)
 i = s32[64] parameter(2)
 rh = bf16[64] all-reduce(h), replica_groups={{}}, to_apply=addbf
 rf = f32[64] all-reduce(f), replica_groups={{}}, to_apply=custom
 ri = s32[64] all-reduce(i), replica_groups={{}}, to_apply=addi
 ROOT t = (bf16[64], f32[64], s32[64]) tuple(rh, rf, ri)
}}
"""


def _exact_paths(mine, replicas: int) -> dict:
    """bf16 and the custom reducer fold in group order, bit for bit (MPI's order would differ
    over 2 devices per process); s32 wraps exactly."""
    import hlort.distributed as hd

    bf16 = dtypes.from_hlo_name("bf16").numpy
    h = {j: _value(j, (64,)).astype(bf16) for j in range(replicas)}
    f = {j: _value(j + 50, (64,)) for j in range(replicas)}
    i = {
        j: np.random.default_rng(j).integers(-(2**31), 2**31, 64, np.int32) for j in range(replicas)
    }
    exe = hd.compile(_exact_program(replicas))
    results = exe.execute_sharded([[h[d.id], f[d.id], i[d.id]] for d in mine])
    eh, ef, ei = h[0].astype(np.float32).astype(bf16), f[0].copy(), i[0].copy()
    with np.errstate(all="ignore"):
        for j in range(1, replicas):
            eh = (eh.astype(np.float32) + h[j].astype(np.float32)).astype(bf16)
            ef = ef + f[j] * np.float32(2)
            ei = (ei + i[j]).astype(np.int32)
    found = {}
    for d, (rh, rf, ri) in zip(mine, results, strict=True):
        found[str(d.id)] = [
            rh.numpy().tobytes() == eh.tobytes(),
            rf.numpy().tobytes() == ef.tobytes(),
            ri.numpy().tobytes() == ei.tobytes(),
        ]
    return found
