"""What each rank runs under ``mpirun`` for tests/distributed/test_mpirun.py.

``python rank_program.py OUT_DIR CHECK...``: runs the named checks in order and writes
``OUT_DIR/rank-R.json`` with each check's findings (or its error), which the test asserts on.
A check that fails records ``{"error": ...}`` and the rank goes on, so the test sees every rank's
story instead of a hung job. Seeds are fixed; every rank computes the expected values itself.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from pathlib import Path

import numpy as np
from rank_checks_groups import check_colliding_groups  # noqa: F401 - found by CHECKS below
from rank_checks_mismatch import (  # noqa: F401 - found by CHECKS below
    check_compiled_mismatch,
    check_serialized_mismatch,
)
from rank_checks_mpi import (  # noqa: F401 - found by CHECKS below
    _all_to_all_forms,
    _exact_paths,
    _reduce_scatter,
    check_mpi_collectives,
    check_mpi_deadline,
    check_serialized_groups,
)
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


def check_transport(out: dict) -> None:
    transport, rank, size = _synthetic_transport()
    everyone = list(range(size * DEVICES_PER_RANK))
    mine = [d for d in everyone if d // DEVICES_PER_RANK == rank]
    got = transport.exchange(("whole", 0), {d: _value(d) for d in mine}, everyone)
    out["whole_group_order"] = list(got)
    out["whole_equal"] = all(np.array_equal(got[d], _value(d)) for d in everyone)
    # every element type crosses bit for bit (bf16 and float8 through ml_dtypes, pred, complex)
    kinds = ["pred", "s8", "u16", "s32", "s64", "f16", "bf16", "f8e4m3fn", "f32", "f64", "c64"]
    typed_ok = []
    for step, name in enumerate(kinds):
        dtype = dtypes.from_hlo_name(name).numpy
        local = {d: (_value(d, (2, 3)) * (d + 1)).astype(dtype) for d in mine}
        got = transport.exchange(("typed", step), local, everyone)
        expect = {d: (_value(d, (2, 3)) * (d + 1)).astype(dtype) for d in everyone}
        same = all(
            got[d].dtype == dtype and got[d].tobytes() == expect[d].tobytes() for d in everyone
        )
        typed_ok.append([name, same])
    out["typed"] = typed_ok
    # shapes that need care: 0-d, empty, non-contiguous, a large one (rendezvous protocol)
    odd = {
        "scalar": lambda d: np.float64(d + 0.5).reshape(()),
        "empty": lambda d: np.zeros((0, 5), np.float32),
        "strided": lambda d: _value(d, (6, 8))[::2, 1::3],
        "large": lambda d: np.full((1 << 20,), d, np.float32),
    }
    odd_ok = {}
    for name, make in odd.items():
        got = transport.exchange(("odd", name), {d: make(d) for d in mine}, everyone)
        odd_ok[name] = all(
            got[d].shape == make(d).shape and np.array_equal(got[d], make(d)) for d in everyone
        )
    out["odd"] = odd_ok


def check_concurrent_groups(out: dict) -> None:
    """Each device thread exchanges over its own group at once (groups {0,2,..} and {1,3,..}),
    and many exchanges share one MPI tag (forced collisions go through the mailbox)."""
    transport, rank, size = _synthetic_transport()
    everyone = list(range(size * DEVICES_PER_RANK))
    results: dict = {}
    errors: list = []

    def device_thread(device_id: int):
        try:
            group = [d for d in everyone if d % DEVICES_PER_RANK == device_id % DEVICES_PER_RANK]
            for step in range(20):
                got = transport.exchange(
                    ("steps", step), {device_id: _value(device_id) + step}, group
                )
                ok = all(np.array_equal(got[d], _value(d) + step) for d in group)
                results.setdefault(device_id, []).append(ok)
        except Exception as err:  # reported, not swallowed: the test asserts on it
            errors.append(f"{device_id}: {err}")

    threads = [
        threading.Thread(target=device_thread, args=(d,))
        for d in everyone
        if d // DEVICES_PER_RANK == rank
    ]
    run_threads(threads, out, errors)
    out["all_ok"] = all(all(v) and len(v) == 20 for v in results.values()) and len(results) == 2

    # the same tag for every exchange: messages of other exchanges land in the mailbox
    transport._tag_ub = 2  # tag = 1 + crc % 1 == 1 for every key
    got_all = []
    for step in range(8):
        got = transport.exchange(
            ("collide", step), {d: _value(d) * step for d in mine_of(rank)}, everyone
        )
        got_all.append(all(np.array_equal(got[d], _value(d) * step) for d in everyone))
    out["collisions_ok"] = all(got_all)


def check_bad_contribution(out: dict) -> None:
    transport, rank, size = _synthetic_transport()
    try:
        transport.exchange("bad", {0: _value(0), 99: _value(99)}, [0, 1])
    except HlortError as err:
        out["code"] = err.code.name
        out["message"] = err.message


def check_deadline(out: dict) -> None:
    """The last rank never joins the exchange: the others get DEADLINE_EXCEEDED, then everyone
    meets again (so the job ends cleanly)."""
    transport, rank, size = _synthetic_transport()
    everyone = list(range(size * DEVICES_PER_RANK))
    if rank != size - 1:
        try:
            transport.exchange(
                "never", {d: _value(d) for d in mine_of(rank)}, everyone, timeout_s=1.0
            )
            out["raised"] = None
        except HlortError as err:
            out["raised"] = err.code.name
            out["message"] = err.message
    transport.barrier(timeout_s=60, what="after the deadline check")
    out["rejoined"] = True


def check_initialize(out: dict) -> None:
    import hlort
    import hlort.distributed as hd

    run = hd.initialize("interpreter")
    again = hd.initialize()
    out["idempotent"] = again is run
    out["process_index"] = hd.process_index()
    out["process_count"] = hd.process_count()
    out["devices"] = [
        [d.id, d.process_index, d.is_addressable, d.platform, d.local_id] for d in hd.devices()
    ]
    out["addressable"] = [d.id for d in hd.addressable_devices()]
    out["local_devices_are_runtime_devices"] = all(
        str(d.local) == f"interpreter:{d.local_id}" for d in hd.addressable_devices()
    )
    local_sum = hlort.backend("interpreter").compile(
        "HloModule local, replica_count=2\n"
        "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"
        "ENTRY main { x = f32[2] parameter(0)\n"
        " ROOT y = f32[2] all-reduce(x), replica_groups={}, to_apply=add }\n"
    )
    got = local_sum.execute_sharded([[np.ones(2, np.float32)], [np.ones(2, np.float32)]])
    out["plain_compile_stays_local"] = all(np.array_equal(o.numpy(), [2, 2]) for (o,) in got)
    remote = [d for d in hd.devices() if not d.is_addressable]
    if remote:
        try:
            hd.local_device(remote[0].id)
        except HlortError as err:
            out["remote_lookup"] = err.code.name


def check_collectives(out: dict) -> None:
    """Buffers of a backend cross processes: device -> host -> MPI -> host -> device."""
    import hlort
    import hlort.distributed as hd

    hd.initialize("interpreter")
    everyone = [d.id for d in hd.devices()]
    mine = hd.addressable_devices()
    buffers = {d.id: hlort.device_put(_value(d.id), d.local) for d in mine}
    reduced = hd.all_reduce(buffers, "sum")
    out["all_reduce_sum"] = all(
        isinstance(b, hlort.runtime.Buffer)
        and b.device == hd.local_device(i)
        and _within_fold(b.numpy(), [_value(d) for d in everyone])
        for i, b in reduced.items()
    )
    ints = {
        d: np.random.default_rng(d).integers(-(2**31), 2**31, (3, 4), np.int32) for d in everyone
    }
    with np.errstate(all="ignore"):
        wrapped = ints[everyone[0]].copy()
        for d in everyone[1:]:
            wrapped = (wrapped + ints[d]).astype(np.int32)
    out["all_reduce_int_exact"] = all(
        np.array_equal(v, wrapped)
        for v in hd.all_reduce({d.id: ints[d.id] for d in mine}, "sum").values()
    )
    shape = (3, 5) if hd.process_index() == 0 else (3, 4)
    try:
        hd.all_reduce({d.id: np.ones(shape, np.float32) for d in mine}, "sum")
        out["all_reduce_mismatch"] = None
    except HlortError as err:
        out["all_reduce_mismatch"] = err.code.name
    # another type on process 0 (bf16: the exchange path) than on the rest (f32: MPI's)
    kind = dtypes.from_hlo_name("bf16" if hd.process_index() == 0 else "f32").numpy
    try:
        hd.all_reduce({d.id: np.ones((3, 4), kind) for d in mine}, "sum", timeout_s=10)
        out["all_reduce_type_mismatch"] = None
    except HlortError as err:
        out["all_reduce_type_mismatch"] = [err.code.name, err.message]
    out["all_reduce_max"] = all(
        np.array_equal(v, np.max([_value(d) for d in everyone], axis=0))
        for v in hd.all_reduce({d.id: _value(d.id) for d in mine}, "max").values()
    )
    gathered = hd.all_gather(buffers, axis=1)
    out["all_gather"] = all(
        np.array_equal(b.numpy(), np.concatenate([_value(d) for d in everyone], axis=1))
        for b in gathered.values()
    )
    n = len(everyone)
    parts = {d: _value(d, (n * 2, 3)) for d in everyone}
    swapped = hd.all_to_all({d.id: parts[d.id] for d in mine}, split_axis=0, concat_axis=1)
    out["all_to_all"] = all(
        np.array_equal(
            v, np.concatenate([np.split(parts[s], n)[everyone.index(d)] for s in everyone], 1)
        )
        for d, v in swapped.items()
    )
    ring = [(d, everyone[(i + 1) % n]) for i, d in enumerate(everyone)]
    shifted = hd.collective_permute(buffers, ring)
    out["permute_ring"] = all(
        np.array_equal(b.numpy(), _value(everyone[(everyone.index(d) - 1) % n]))
        for d, b in shifted.items()
    )
    one_way = [(everyone[0], everyone[-1])]
    involved = {d.id: _value(d.id) for d in mine if d.id in (everyone[0], everyone[-1])}
    result = hd.collective_permute(involved, one_way) if involved else {}
    out["permute_one_way"] = all(
        np.array_equal(v, _value(everyone[0]) if d == everyone[-1] else np.zeros((3, 4)))
        for d, v in result.items()
    )


def _program(replicas: int) -> str:
    evens = ",".join(str(i) for i in range(0, replicas, 2))
    odds = ",".join(str(i) for i in range(1, replicas, 2))
    ring = ",".join(f"{{{i},{(i + 1) % replicas}}}" for i in range(replicas))
    halves = f"{{{{{evens}}},{{{odds}}}}}"
    result = (
        f"(f32[8]{{0}}, f32[{8 * replicas}]{{0}}, f32[8]{{0}}, f32[8]{{0}}, f32[8]{{0}}, u32[])"
    )
    return f"""HloModule across_processes, replica_count={replicas}

%add (a: f32[], b: f32[]) -> f32[] {{
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}}

ENTRY %main (x: f32[8]) -> (f32[8], f32[{8 * replicas}], f32[8], f32[8], f32[8], u32[]) {{
  %x = f32[8]{{0}} parameter(0)
  %ar = f32[8]{{0}} all-reduce(f32[8]{{0}} %x), replica_groups={{}}, to_apply=%add
  %ag = f32[{8 * replicas}]{{0}} all-gather(f32[8]{{0}} %x), replica_groups={{}}, dimensions={{0}}
  %aa = f32[8]{{0}} all-to-all(f32[8]{{0}} %x), replica_groups={{}}, dimensions={{0}}
  %cp = f32[8]{{0}} collective-permute(f32[8]{{0}} %x), source_target_pairs={{{ring}}}
  %halves = f32[8]{{0}} all-reduce(f32[8]{{0}} %x), replica_groups={halves}, to_apply=%add
  %id = u32[] replica-id()
  ROOT %t = {result} tuple(%ar, %ag, %aa, %cp, %halves, %id)
}}
"""


def _call_with_arrays(x: dict) -> bool:
    """One copy per process (its first device): ``exe(array)`` is a plain one-device call here,
    and its all-reduce must still meet the other processes (not run as the single copy of a
    plugin's host fast path, which cpu has)."""
    import hlort.distributed as hd

    firsts = [hd.current().table.devices_of(r)[0].id for r in range(hd.process_count())]
    single = hd.compile(
        f"HloModule one_each, replica_count={len(firsts)}\n"
        "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"
        "ENTRY main { x = f32[8] parameter(0)\n"
        " ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add }\n",
        {"num_replicas": len(firsts), "device_assignment": [[d] for d in firsts]},
    )
    got = single(x[firsts[hd.process_index()]])
    return _within_fold(np.asarray(got), [x[d] for d in firsts])


def check_program(out: dict) -> None:
    """A compiled program whose collectives span every process's devices (one replica per
    device, default assignment: replica i on global device i), checked bit for bit against
    NumPy folds in group order."""
    import hlort.distributed as hd

    hd.initialize("interpreter")
    replicas = len(hd.devices())
    exe = hd.compile(_program(replicas))
    mine = hd.addressable_devices()
    out["executable_devices"] = [str(d) for d in exe.devices]
    x = {i: _value(i, (8,)) for i in range(replicas)}
    results = exe.execute_sharded([[x[d.id]] for d in mine])
    checks = {}
    digests = {}
    for d, outputs in zip(mine, results, strict=True):
        i = d.id
        ar, ag, aa, cp, halves, rid = (b.numpy() for b in outputs)
        parity = [j for j in range(replicas) if j % 2 == i % 2]
        piece = 8 // replicas
        digests[str(i)] = [_digest(ar), _digest(halves)]
        checks[i] = {
            # float sums cross processes through MPI's Allreduce: its order, stated tolerance
            "all_reduce": _within_fold(ar, [x[j] for j in range(replicas)]),
            "all_gather": np.array_equal(ag, np.concatenate([x[j] for j in range(replicas)])),
            "all_to_all": np.array_equal(
                aa, np.concatenate([x[j][i * piece : (i + 1) * piece] for j in range(replicas)])
            ),
            "permute": np.array_equal(cp, x[(i - 1) % replicas]),
            "split_groups": _within_fold(halves, [x[j] for j in parity]),
            "replica_id": int(rid) == i,
        }
    out["checks"] = {str(k): v for k, v in checks.items()}
    out["digests"] = digests
    out["call_with_arrays"] = _call_with_arrays(x)
    out["exact_paths"] = _exact_paths(mine, replicas)
    out["all_to_all_forms"] = _all_to_all_forms(mine, replicas)
    out["reduce_scatter"] = _reduce_scatter(mine, replicas)


def check_compile_errors(out: dict) -> None:
    """What hd.compile refuses, in words that name the fix."""
    import hlort.distributed as hd

    hd.initialize("interpreter")
    total = len(hd.devices())
    text = (
        f"HloModule big, replica_count={2 * total}\nENTRY main {{ ROOT x = f32[2] parameter(0) }}\n"
    )
    other = [d.id for d in hd.devices() if not d.is_addressable][:1]
    cases = {
        "too_many": lambda: hd.compile(text),
        "none_here": lambda: hd.compile(
            "HloModule one\nENTRY main { ROOT x = f32[2] parameter(0) }\n",
            {"device_assignment": [other]},
        ),
        "unknown_device": lambda: hd.compile(
            "HloModule one\nENTRY main { ROOT x = f32[2] parameter(0) }\n",
            {"device_assignment": [[total + 5]]},
        ),
    }
    for name, make in cases.items():
        try:
            make()
            out[name] = None
        except HlortError as err:
            out[name] = [err.code.name, err.message]


MLP_RTOL, MLP_ATOL = 1e-5, 1e-6  # f32, HIGHEST dots: summation order differs from 1 device


def check_mlp(out: dict) -> None:
    """The must-show: one data-parallel SGD step of a 3-layer MLP (hlort.testing's program:
    forward, backward, all-reduce of the loss and six gradients) on every process's cpu
    devices, one replica each, against the one-device step on the interpreter."""
    import hashlib
    import os

    import hlort
    import hlort.distributed as hd
    from hlort.runtime.compile import compile_on
    from hlort.testing.collective_programs import mlp_inputs, mlp_step_program

    platform = os.environ.get("HLORT_TEST_PLATFORM", "cpu")
    hd.initialize(platform)
    replicas = len(hd.devices())
    x, y, params = mlp_inputs(8 * replicas)
    oracle = compile_on(hlort.backend("interpreter"), mlp_step_program(x.shape[0], 1))
    single = [b.numpy() for b in oracle.execute_sharded([[x, y, *params]])[0]]
    exe = hd.compile(mlp_step_program(8, replicas), {"num_replicas": replicas})
    mine = hd.addressable_devices()
    args = [[x[8 * d.id : 8 * (d.id + 1)], y[8 * d.id : 8 * (d.id + 1)], *params] for d in mine]
    per_device = [[b.numpy() for b in outs] for outs in exe.execute_sharded(args)]
    out["platform"] = platform
    out["replicas"] = replicas
    out["fallbacks"] = exe.raw.stats()["fallback_count"] if hasattr(exe.raw, "stats") else None
    out["matches_one_device"] = all(
        np.allclose(got, want, rtol=MLP_RTOL, atol=MLP_ATOL)
        for outs in per_device
        for got, want in zip(outs, single, strict=True)
    )
    out["weights_moved"] = not np.allclose(per_device[0][1], params[0])
    out["call_with_arrays"] = _call_with_arrays({d: _value(d, (8,)) for d in range(replicas)})
    # a process's one copy of a cheap program runs on the caller's thread; two copies never
    firsts = [hd.current().table.devices_of(r)[0].id for r in range(hd.process_count())]
    small = hd.compile(
        f"HloModule small, replica_count={len(firsts)}\n"
        "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"
        "ENTRY main { x = f32[8] parameter(0)\n"
        " ROOT y = f32[8] all-reduce(x), replica_groups={}, to_apply=add }\n",
        {"num_replicas": len(firsts), "device_assignment": [[d] for d in firsts]},
    )
    x8 = _value(hd.process_index(), (8,))
    total = small.execute_sharded([[x8]])[0][0].numpy()
    out["inline"] = [exe.raw._inline, small.raw._inline]
    out["inline_result"] = _within_fold(total, [_value(r, (8,)) for r in range(len(firsts))])
    out["digests"] = [
        hashlib.sha256(b"".join(a.tobytes() for a in outs)).hexdigest() for outs in per_device
    ]


CHECKS = {
    name[len("check_") :]: fn for name, fn in dict(globals()).items() if name.startswith("check_")
}


def main() -> int:
    out_dir = Path(sys.argv[1])
    _, rank, _ = _rank_size()
    report: dict = {}
    for name in sys.argv[2:]:
        found: dict = {}
        started = time.perf_counter()
        try:
            CHECKS[name](found)
        except Exception as err:
            found["error"] = f"{type(err).__name__}: {err}"
            found["traceback"] = traceback.format_exc()
        found["seconds"] = round(time.perf_counter() - started, 3)  # shown, never asserted
        report[name] = found
    (out_dir / f"rank-{rank}.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
