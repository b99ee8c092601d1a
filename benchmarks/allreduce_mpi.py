"""All-reduce bandwidth: hlort across MPI ranks and on in-process cpu devices vs ``MPI.Allreduce``.

One ``mpirun -n RANKS`` job (this machine, shared memory between ranks) measures, for each
buffer size, side by side and in alternating order round after round (so a busy stretch of a
machine shared with other work hits every variant alike):

* ``MPI``: ``comm.Allreduce(x, out)`` (mpi4py on NumPy arrays, preallocated output) over the
  RANKS ranks: the baseline of every row;
* ``MPI nb``: ``comm.Iallreduce(x, out)`` then ``Wait``, the nonblocking form hlort uses (on
  this machine Open MPI's nonblocking algorithm is often faster than its blocking one at 16 MiB
  and up): the stricter baseline, shown as ``x best`` (MPI time = the faster of the two);
* ``program``: an HLO ``all-reduce`` compiled with ``hlort.distributed.compile`` (one replica
  per rank, on each rank's first ``--platform`` device, default cpu) and executed on a device
  buffer until the result is ready: what a sharded program's all-reduce costs;
* ``arrays``: ``hlort.distributed.all_reduce`` on NumPy arrays (adds a small signature exchange);
* ``in-process``: rank 0 alone runs the all-reduce on RANKS virtual cpu devices of one process
  (shared memory, a thread per device) while the other ranks sleep; its fair baseline is the
  same row's MPI.Allreduce among RANKS ranks on this host.

Each call starts after a barrier (rank 0's clock); the ratios compare medians (``mpi_s /
hlort_s``: above 1 is faster than MPI), and bandwidth is ``B / t`` (the algorithm bandwidth).
The load average before and after each size is printed with it: on a shared machine these
numbers move with the load. Results are checked: the cpu in-process result bit for bit against
NumPy's fold, the program's within ``2 (n-1) eps sum|x|`` of MPI's (MPI's order).

The goal (issue 17): hlort >= 0.9x of MPI's bandwidth (large sizes at least). Measured here,
never asserted in a test.

    .venv/bin/python benchmarks/allreduce_mpi.py [--ranks 2 4] [--quick] [--repeat N]

Writes benchmarks/results/allreduce_mpi.json (one report per rank count). Without
mpi4py/mpirun it says so and exits 3.
"""

from __future__ import annotations

import argparse
import functools
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
VARIANTS = ("mpi", "mpi_nb", "program", "arrays", "in_process")


def sizes(quick: bool) -> list[int]:
    """Buffer sizes in bytes."""
    return [1 << 12, 1 << 20] if quick else [1 << 12, 1 << 20, 1 << 24, 1 << 26]


def all_reduce_program(count: int, replicas: int) -> str:
    return (
        f"HloModule all_reduce_{count}, replica_count={replicas}\n"
        "add { a = f32[] parameter(0)\n b = f32[] parameter(1)\n ROOT c = f32[] add(a, b) }\n"
        f"ENTRY main {{\n x = f32[{count}] parameter(0)\n"
        f" ROOT y = f32[{count}] all-reduce(x), replica_groups={{}}, to_apply=add\n}}\n"
    )


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _idle_barrier(comm) -> None:
    """A barrier that sleeps while it waits (a spinning one would take a core from rank 0's
    in-process measurement)."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-3)


class InProcess:
    """The all-reduce on ``n`` virtual cpu devices of this process (rank 0 only)."""

    def __init__(self, n: int, count: int, arrays: list[np.ndarray]):
        from hlort.runtime.compile import compile_on
        from hlort.runtime.selection import backend_for_client
        from hlort_cpu.plugin import CpuPlugin

        self.client = CpuPlugin().create_client({"device_count": n})
        self.exe = compile_on(backend_for_client(self.client), all_reduce_program(count, n))
        self.bufs = [
            [self.client.buffer_from_host(a, d.raw)]
            for a, d in zip(arrays, self.exe.devices, strict=True)
        ]
        for (b,) in self.bufs:
            b.ready_event().wait()
        self.outs: list = []

    def __call__(self) -> None:
        self.outs = []  # the last results die first, as in a loop (their pages are reused)
        outs = self.exe.raw.execute(self.bufs)
        for (o,) in outs:
            o.ready_event().wait()
        self.outs = outs

    def result(self) -> np.ndarray:
        return self.outs[0][0].to_host().result()


def _timed(fns: dict, comm, rank: int, repeat: int) -> dict[str, list[float]]:
    """``repeat`` rounds; a round runs every variant once, in an order that rotates from round
    to round. Collective variants start after a barrier; ``in_process`` runs on rank 0 while
    the others wait in a sleeping barrier."""
    names = list(fns)
    times: dict[str, list[float]] = {name: [] for name in names}
    for name in names:  # warm-up: first-touch pages, MPI connections, communicators
        _run_one(name, fns[name], comm, rank)
    for r in range(repeat):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            times[name].append(_run_one(name, fns[name], comm, rank))
    return times


def _run_one(name: str, fn, comm, rank: int) -> float:
    if name == "in_process":
        seconds = 0.0
        if rank == 0:
            start = time.perf_counter()
            fn()
            seconds = time.perf_counter() - start
        _idle_barrier(comm)
        return seconds
    comm.Barrier()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def worker(args) -> int:
    import hlort.distributed as hd
    from hlort.distributed.process_env import import_mpi

    MPI = import_mpi()
    run = hd.initialize(args.platform)
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    group = [run.table.devices_of(r)[0].id for r in range(size)]  # one device per rank
    device = run.table.device(group[rank])
    options = {"num_replicas": size, "device_assignment": [[d] for d in group]}
    rows = []
    for nbytes in sizes(args.quick):
        count = nbytes // 4
        everyone = [
            np.random.default_rng(r).standard_normal(count).astype(np.float32) for r in range(size)
        ]
        x, out = everyone[rank], np.empty(count, np.float32)
        repeat = args.repeat or (5 if args.quick else max(9, min(41, (1 << 27) // nbytes)))
        buffer = device.local.backend.device_put(x, device.local)
        exe = hd.compile(all_reduce_program(count, size), options)
        local = InProcess(size, count, everyone) if rank == 0 else None
        fns = {
            "mpi": lambda x=x, out=out: comm.Allreduce(x, out, op=MPI.SUM),
            "mpi_nb": lambda x=x, out=out: comm.Iallreduce(x, out, op=MPI.SUM).Wait(),
            "program": lambda b=buffer, e=exe: e.execute_sharded([[b]])[0][0].block_until_ready(),
            "arrays": lambda x=x: hd.all_reduce({device.id: x}, group=group),
            "in_process": local,
        }
        load_before = _load()
        times = _timed(fns, comm, rank, repeat)
        load_after = _load()
        # the results: MPI's sum and the program's agree within the stated tolerance; the
        # in-process devices give NumPy's fold in group order bit for bit
        comm.Allreduce(x, out, op=MPI.SUM)
        got = exe.execute_sharded([[buffer]])[0][0].numpy()
        bound = 2 * (size - 1) * np.finfo(np.float32).eps * sum(np.abs(a) for a in everyone)
        program_ok = bool(np.all(np.abs(got - out) <= bound))
        if rank == 0:
            fold = functools.reduce(np.add, everyone)
            in_process_exact = local.result().tobytes() == fold.tobytes()
            local.client.close()
            medians = {k: statistics.median(v) for k, v in times.items()}
            rows.append(
                {
                    "bytes": nbytes,
                    "repeat": repeat,
                    "load": [load_before, load_after],
                    "median_s": medians,
                    "best_s": {k: min(v) for k, v in times.items()},
                    "gb_s": {k: nbytes / v / 1e9 for k, v in medians.items()},
                    "over_mpi": {k: medians["mpi"] / v for k, v in medians.items()},
                    "over_best_mpi": {
                        k: min(medians["mpi"], medians["mpi_nb"]) / v for k, v in medians.items()
                    },
                    "program_within_tolerance": program_ok,
                    "in_process_bitwise": in_process_exact,
                }
            )
    if rank == 0:
        report = {"ranks": size, "platform": run.platform, "goal": GOAL, "rows": rows}
        Path(args.worker).write_text(json.dumps(report, indent=1))
    return 0


def print_report(report: dict) -> None:
    n = report["ranks"]
    print(
        f"all-reduce (sum, f32), {n} MPI ranks vs {n} in-process cpu devices; baseline "
        f"MPI.Allreduce over {n} ranks (x MPI), or the faster of it and MPI.Iallreduce (x best); "
        f"medians, GB/s = B/t, ratio = MPI time / hlort time (goal >= {report['goal']})"
    )
    print(
        f"{'bytes':>9} {'MPI':>6} {'MPI nb':>6} | {'program':>7} {'x MPI':>5} {'x best':>6} | "
        f"{'arrays':>6} {'x MPI':>5} | {f'{n} cpu devs':>11} {'x MPI':>5} {'x best':>6} | load"
    )
    for row in report["rows"]:
        g, x, b = row["gb_s"], row["over_mpi"], row["over_best_mpi"]
        print(
            f"{row['bytes']:>9} {g['mpi']:>6.3f} {g['mpi_nb']:>6.3f} | {g['program']:>7.3f} "
            f"{x['program']:>5.2f} {b['program']:>6.2f} | {g['arrays']:>6.3f} {x['arrays']:>5.2f} "
            f"| {g['in_process']:>11.3f} {x['in_process']:>5.2f} {b['in_process']:>6.2f} | "
            f"{row['load'][0]:.1f}/{row['load'][1]:.1f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--platform", default="cpu", help="where the program's buffers live")
    parser.add_argument("--repeat", type=int, default=0, help="timed rounds (default: by size)")
    parser.add_argument("--quick", action="store_true", help="4 KiB and 1 MiB, 5 rounds (CI)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # set in the ranks: the report path
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    reports = []
    for ranks in args.ranks:
        report = run_ranks(ranks, args.platform, args.quick, args.repeat)
        if isinstance(report, str):
            print(f"allreduce_mpi: skipped: {report}")
            return 3
        print_report(report)
        reports.append(report)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "allreduce_mpi.json").write_text(json.dumps(reports, indent=1))
    return 0


def run_ranks(ranks: int, platform: str, quick: bool, repeat: int = 0) -> dict | str:
    """Start the ranks under mpirun; their report, or the reason MPI cannot run here."""
    from hlort.distributed.mpirun import mpirun_command, mpirun_environment
    from hlort.distributed.process_env import mpi_available

    reason = mpi_available()
    if reason is not None:
        return reason
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"allreduce_mpi_{ranks}ranks.json"
    argv = [__file__, "--worker", str(path), "--platform", platform, "--repeat", str(repeat)]
    env = mpirun_environment(dict(os.environ))
    env.setdefault("HLORT_CPU_DEVICES", "1")  # each rank's own cpu: one device
    process = subprocess.Popen(
        mpirun_command(ranks, argv + (["--quick"] if quick else [])),
        env=env,
        start_new_session=True,  # on a timeout the ranks are killed with mpirun
    )
    try:
        returncode = process.wait(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        raise RuntimeError(f"allreduce_mpi: mpirun -n {ranks} ran past 900 s") from None
    if returncode != 0:
        raise RuntimeError(f"allreduce_mpi: mpirun -n {ranks} exited {returncode}")
    return json.loads(path.read_text())


def bench_rows(quick: bool = False, ranks: tuple[int, ...] = (2, 4)) -> list[dict]:
    """The rows for benchmarks/collectives_bench.py --mpi (none, saying why, without MPI)."""
    rows = []
    for n in ranks:
        report = run_ranks(n, "cpu", quick)
        if isinstance(report, str):
            print(f"MPI: skipped: {report}")
            return []
        print_report(report)
        rows += [{"backend": "mpi", "ranks": report["ranks"], **row} for row in report["rows"]]
    return rows


if __name__ == "__main__":
    sys.exit(main())
