"""All-reduce bandwidth across MPI ranks: hlort's cross-process all-reduce vs ``MPI.Allreduce``.

Both sum the same float32 buffers (one per rank) over the same communicator size; bandwidth is
the buffer's bytes over the best time of one all-reduce (rank 0's clock, each call after a
barrier; the variants take turns, round by round, so a busy stretch of a shared machine hits all
alike; the medians are in the JSON). Rows:

* ``MPI.Allreduce``: mpi4py on NumPy arrays, into a preallocated output (the baseline).
* ``hlort arrays``: ``hlort.distributed.all_reduce`` on NumPy arrays (the MPI transport's
  exchange, then the sum in group order, as every hlort collective computes it).
* ``hlort buffers``: the same on buffers of the ``--platform`` backend (default: the
  interpreter's host memory): device -> host -> MPI -> host -> device.
* ``hlort program``: an HLO ``all-reduce`` compiled with ``hlort.distributed.compile`` (one
  replica per rank) and executed on those buffers: the rendezvous hands it to the transport.

The goal (issue 17): hlort >= 0.9x of MPI's bandwidth. Measured here, never asserted in a test.

    .venv/bin/python benchmarks/allreduce_mpi.py [--ranks 2] [--quick] [--platform cpu]

It starts itself under ``mpirun -n RANKS`` (this machine only, shared memory between ranks) and
writes benchmarks/results/allreduce_mpi.json. Without mpi4py/mpirun it says so and exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
GOAL = 0.9


def sizes(quick: bool) -> list[int]:
    """Buffer sizes in bytes."""
    return [1 << 12, 1 << 20] if quick else [1 << 12, 1 << 16, 1 << 20, 1 << 23, 1 << 26]


def _time_interleaved(fns: dict, comm, repeat: int) -> dict[str, float]:
    """Each variant's best time over ``repeat`` rounds; a round runs every variant once, after a
    barrier each, so a noisy stretch of a shared machine hits all of them alike. The best (not
    the median) is what the transfer costs when neither rank is descheduled mid-way."""
    for fn in fns.values():
        fn()  # warm-up: first-touch pages, MPI connections
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            comm.Barrier()
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: min(ts) for name, ts in times.items()} | {
        f"{name}_median": statistics.median(ts) for name, ts in times.items()
    }


def all_reduce_program(count: int, replicas: int) -> str:
    return (
        f"HloModule all_reduce_{count}, replica_count={replicas}\n"
        "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"
        f"ENTRY main {{\n x = f32[{count}] parameter(0)\n"
        f" ROOT y = f32[{count}] all-reduce(x), replica_groups={{}}, to_apply=add\n}}\n"
    )


def _one_replica_per_rank(group):
    from hlort.plugin.options import CompileOptions

    return CompileOptions(num_replicas=len(group), device_assignment=tuple((d,) for d in group))


def worker(args) -> int:
    import hlort.distributed as hd
    from hlort.distributed.process_env import import_mpi

    MPI = import_mpi()
    run = hd.initialize(args.platform)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    # one device per rank (the backend's first): the group every hlort row reduces over
    group = [run.table.devices_of(r)[0].id for r in range(size)]
    device = run.table.device(group[rank])
    rows = []
    for nbytes in sizes(args.quick):
        count = nbytes // 4
        x = np.random.default_rng(rank).standard_normal(count).astype(np.float32)
        out = np.empty_like(x)
        repeat = args.repeat or (3 if args.quick else max(10, min(50, (1 << 26) // nbytes)))
        buffer = device.local.backend.device_put(x, device.local)
        exe = hd.compile(all_reduce_program(count, size), _one_replica_per_rank(group))
        t = _time_interleaved(
            {
                "mpi": lambda x=x, out=out: comm.Allreduce(x, out, op=MPI.SUM),
                "arrays": lambda x=x: hd.all_reduce({device.id: x}, group=group),
                "buffers": lambda b=buffer: hd.all_reduce({device.id: b}, group=group)[
                    device.id
                ].block_until_ready(),
                "program": lambda b=buffer, e=exe: e.execute_sharded([[b]])[0][
                    0
                ].block_until_ready(),
            },
            comm,
            repeat,
        )
        mpi_s, arrays_s, buffers_s, program_s = t["mpi"], t["arrays"], t["buffers"], t["program"]
        # the results agree: MPI's sum and hlort's (group order) within float32 rounding
        mine = hd.all_reduce({device.id: x}, group=group)[device.id]
        comm.Allreduce(x, out, op=MPI.SUM)
        error = float(np.max(np.abs(mine - out)) / max(1e-30, float(np.max(np.abs(out)))))
        program_result = exe.execute_sharded([[buffer]])[0][0].numpy()
        if not np.array_equal(program_result, mine):
            raise AssertionError("the compiled all-reduce differs from hlort.distributed's")
        rows.append(
            {
                "bytes": nbytes,
                "repeat": repeat,
                "mpi_s": mpi_s,
                "hlort_arrays_s": arrays_s,
                "hlort_buffers_s": buffers_s,
                "hlort_program_s": program_s,
                "mpi_gb_s": nbytes / mpi_s / 1e9,
                "hlort_arrays_gb_s": nbytes / arrays_s / 1e9,
                "hlort_buffers_gb_s": nbytes / buffers_s / 1e9,
                "hlort_program_gb_s": nbytes / program_s / 1e9,
                "arrays_over_mpi": mpi_s / arrays_s,
                "buffers_over_mpi": mpi_s / buffers_s,
                "program_over_mpi": mpi_s / program_s,
                "max_rel_diff_vs_mpi": error,
                "medians_s": {k: v for k, v in t.items() if k.endswith("_median")},
            }
        )
    if rank == 0:
        report = {"ranks": size, "platform": run.platform, "goal": GOAL, "rows": rows}
        Path(args.worker).write_text(json.dumps(report, indent=1))
    return 0


def print_report(report: dict) -> None:
    print(
        f"all-reduce (sum, float32) over {report['ranks']} MPI ranks on this machine; "
        f"buffers on {report['platform']}; goal hlort >= {report['goal']}x MPI"
    )
    print(
        f"{'bytes':>10} {'MPI GB/s':>9} {'hlort arrays':>13} {'x MPI':>6} "
        f"{'hlort buffers':>14} {'x MPI':>6} {'hlort program':>14} {'x MPI':>6} "
        f"{'max rel diff':>12}"
    )
    for row in report["rows"]:
        print(
            f"{row['bytes']:>10} {row['mpi_gb_s']:>9.3f} {row['hlort_arrays_gb_s']:>13.3f} "
            f"{row['arrays_over_mpi']:>6.2f} {row['hlort_buffers_gb_s']:>14.3f} "
            f"{row['buffers_over_mpi']:>6.2f} {row['hlort_program_gb_s']:>14.3f} "
            f"{row['program_over_mpi']:>6.2f} {row['max_rel_diff_vs_mpi']:>12.2e}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--platform", default="interpreter", help="where the buffers live")
    parser.add_argument("--repeat", type=int, default=0, help="timed repeats (default: by size)")
    parser.add_argument("--quick", action="store_true", help="4 KiB and 1 MiB, 3 repeats (CI)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # set in the ranks: the report path
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    report = run_ranks(args.ranks, args.platform, args.quick, args.repeat)
    if isinstance(report, str):
        print(f"allreduce_mpi: skipped: {report}")
        return 3
    print_report(report)
    return 0


def run_ranks(ranks: int, platform: str, quick: bool, repeat: int = 0) -> dict | str:
    """Start the ranks under mpirun; their report, or the reason MPI cannot run here."""
    from hlort.distributed.mpirun import mpirun_command, mpirun_environment
    from hlort.distributed.process_env import mpi_available

    reason = mpi_available()
    if reason is not None:
        return reason
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "allreduce_mpi.json"
    argv = [__file__, "--worker", str(path), "--platform", platform, "--repeat", str(repeat)]
    process = subprocess.Popen(
        mpirun_command(ranks, argv + (["--quick"] if quick else [])),
        env=mpirun_environment(dict(os.environ)),
        start_new_session=True,  # on a timeout the ranks are killed with mpirun
    )
    try:
        returncode = process.wait(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise RuntimeError(f"allreduce_mpi: mpirun -n {ranks} ran past 600 s") from None
    if returncode != 0:
        raise RuntimeError(f"allreduce_mpi: mpirun -n {ranks} exited {returncode}")
    return json.loads(path.read_text())


def bench_rows(quick: bool = False, ranks: int = 2, platform: str = "interpreter") -> list[dict]:
    """The rows for benchmarks/collectives_bench.py --mpi (none, saying why, without MPI)."""
    report = run_ranks(ranks, platform, quick)
    if isinstance(report, str):
        print(f"MPI: skipped: {report}")
        return []
    print_report(report)
    return [{"backend": "mpi", "ranks": report["ranks"], **row} for row in report["rows"]]


if __name__ == "__main__":
    sys.exit(main())
