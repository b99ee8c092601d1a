"""Collectives: all-reduce bandwidth over 2 and 4 virtual cpu devices, and tpusim's modelled
ring time against the analytic ring formula.

cpu: an f32 sum all-reduce of B bytes on N devices (one process, shared memory), timed from
``execute`` until every device's output is ready (the operands are already on the devices), the
median of ``--repeat`` runs after one warm-up. It prints the time, the algorithm bandwidth
``B / t`` and the bus bandwidth ``2(N-1)/N * B / t`` (NCCL's convention: what each link would
have to carry in a ring), next to NumPy summing the same N arrays on one thread (``np.sum`` of
a stacked copy excluded: ``functools.reduce(np.add, arrays)``), as a ratio.

tpusim: all-reduce, all-gather, reduce-scatter and a ring permute of B bytes over 2 and 4 chips;
the profile's modelled link time against ``2(N-1)/N * B / bw + 2(N-1) * latency`` (all-reduce),
``(N-1)/N * B / bw + (N-1) * latency`` (all-gather over the gathered B, reduce-scatter) and
``B / bw + latency`` (permute); the ratio must print 1.000.

MPI: ``--mpi`` adds, in the same run, ``benchmarks/allreduce_mpi.py``'s side-by-side table for
2 and 4 ranks (``--ranks``): ``MPI.Allreduce`` over N ranks on this host against hlort's
compiled all-reduce across N ranks, ``hlort.distributed.all_reduce``, and the all-reduce on N
in-process cpu devices (whose fair baseline is that same MPI.Allreduce over N ranks), as ratios
of medians with the load average.

    .venv/bin/python benchmarks/collectives_bench.py [--repeat 5] [--quick] [--mpi]

Writes benchmarks/results/collectives.json. ``--quick``: small buffers, one run (CI smoke test).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import os
import statistics
import sys
import time

import numpy as np

from hlort.runtime.compile import compile_on
from hlort.runtime.selection import backend_for_client

SUM = """
sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
"""


def all_reduce_text(n: int, elements: int) -> str:
    return (
        f"HloModule all_reduce_{elements}, replica_count={n}\n{SUM}\nENTRY main {{\n"
        f"  x = f32[{elements}] parameter(0)\n"
        f"  ROOT y = f32[{elements}] all-reduce(x), replica_groups={{}}, to_apply=sum\n}}\n"
    )


def collective_text(kind: str, n: int, elements: int) -> str:
    body = {
        "all-reduce": f"f32[{elements}] all-reduce(x), replica_groups={{}}, to_apply=sum",
        "all-gather": f"f32[{elements * n}] all-gather(x), replica_groups={{}}, dimensions={{0}}",
        "reduce-scatter": f"f32[{elements // n}] reduce-scatter(x), replica_groups={{}}, "
        f"dimensions={{0}}, to_apply=sum",
        "collective-permute": f"f32[{elements}] collective-permute(x), source_target_pairs="
        + "{"
        + ",".join(f"{{{i},{(i + 1) % n}}}" for i in range(n))
        + "}",
    }[kind]
    return (
        f"HloModule {kind.replace('-', '_')}_{elements}, replica_count={n}\n{SUM}\n"
        f"ENTRY main {{\n  x = f32[{elements}] parameter(0)\n  ROOT y = {body}\n}}\n"
    )


def _median_time(run, repeat: int) -> float:
    run()  # warm-up: first-call costs out of the measurement
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_rows(sizes: list[int], repeat: int) -> list[dict]:
    from hlort_cpu.plugin import CpuPlugin

    rows = []
    for n in (2, 4):
        client = CpuPlugin().create_client({"device_count": n})
        backend = backend_for_client(client)
        for elements in sizes:
            exe = compile_on(backend, all_reduce_text(n, elements))
            rng = np.random.default_rng(elements)
            arrays = [rng.standard_normal(elements).astype(np.float32) for _ in range(n)]
            bufs = [
                [client.buffer_from_host(a, d.raw)]
                for a, d in zip(arrays, exe.devices, strict=True)
            ]
            for (b,) in bufs:
                b.ready_event().wait()
            outs_box: list = []

            def run(exe=exe, bufs=bufs, outs_box=outs_box):
                outs = exe.raw.execute(bufs)
                for (o,) in outs:
                    o.ready_event().wait()
                outs_box[:] = outs

            seconds = _median_time(run, repeat)
            got = outs_box[0][0].to_host().result()
            expected = functools.reduce(np.add, arrays)
            assert got.tobytes() == expected.tobytes(), "all-reduce differs from NumPy's fold"
            numpy_s = _median_time(lambda arrays=arrays: functools.reduce(np.add, arrays), repeat)
            nbytes = elements * 4
            rows.append(
                {
                    "backend": "cpu",
                    "devices": n,
                    "bytes": nbytes,
                    "seconds": seconds,
                    "algbw_gb_s": nbytes / seconds / 1e9,
                    "busbw_gb_s": 2 * (n - 1) / n * nbytes / seconds / 1e9,
                    "numpy_fold_s": numpy_s,
                    "hlort_over_numpy": seconds / numpy_s,
                }
            )
        client.close()
    return rows


def tpusim_formula(kind: str, n: int, nbytes: int, bw: float, lat: float) -> float:
    """The textbook ring cost of ``kind`` on ``n`` neighbouring chips (B = the operand's bytes;
    all-gather moves the gathered n*B)."""
    if kind == "all-reduce":
        return 2 * (n - 1) / n * nbytes / bw + 2 * (n - 1) * lat
    if kind == "all-gather":
        return (n - 1) / n * (nbytes * n) / bw + (n - 1) * lat
    if kind == "reduce-scatter":
        return (n - 1) / n * nbytes / bw + (n - 1) * lat
    return nbytes / bw + lat


def tpusim_rows(sizes: list[int]) -> list[dict]:
    from hlort_tpusim.plugin import TpuSimPlugin

    client = TpuSimPlugin().create_client()
    backend = backend_for_client(client)
    cfg = client.config
    rows = []
    for n in (2, 4):
        for elements in sizes:
            for kind in ("all-reduce", "all-gather", "reduce-scatter", "collective-permute"):
                exe = compile_on(backend, collective_text(kind, n, elements))
                x = np.ones(elements, np.float32)
                for (out,) in exe.execute_sharded([[x] for _ in range(n)]):
                    out.numpy()
                (c,) = exe.devices[0].raw.last_profile.collectives
                formula = tpusim_formula(
                    kind, n, elements * 4, cfg.ici_bandwidth, cfg.ici_latency_s
                )
                rows.append(
                    {
                        "backend": "tpusim",
                        "collective": kind,
                        "chips": n,
                        "bytes": elements * 4,
                        "modelled_us": c["link_seconds"] * 1e6,
                        "formula_us": formula * 1e6,
                        "modelled_over_formula": c["link_seconds"] / formula,
                    }
                )
    client.close()
    return rows


def mpi_rows(quick: bool, ranks: list[int]) -> list[dict]:
    """benchmarks/allreduce_mpi.py's rows (``bench_rows``: it prints its table), if any."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "allreduce_mpi.py")
    if not os.path.exists(path):
        print("MPI: benchmarks/allreduce_mpi.py is not here; no MPI rows")
        return []
    spec = importlib.util.spec_from_file_location("allreduce_mpi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    if not hasattr(module, "bench_rows"):
        print("MPI: allreduce_mpi.py has no bench_rows(quick=...); run it directly")
        return []
    return list(module.bench_rows(quick=quick, ranks=tuple(ranks)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small buffers, one run (CI)")
    parser.add_argument("--mpi", action="store_true", help="add benchmarks/allreduce_mpi.py rows")
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 4], help="for --mpi")
    parser.add_argument(
        "--results",
        default=os.path.join(os.path.dirname(__file__), "results"),
        help="folder for collectives.json",
    )
    args = parser.parse_args()
    if args.quick:
        args.repeat = 1
    cpu_sizes = [1 << 12, 1 << 16] if args.quick else [1 << 10, 1 << 18, 1 << 22, 1 << 24]
    sim_sizes = [1 << 10] if args.quick else [1 << 10, 1 << 16, 1 << 20]
    rows = []
    print(
        f"{'cpu all-reduce':<16} {'devices':>7} {'bytes':>10} {'time us':>10} {'algbw GB/s':>10} "
        f"{'busbw GB/s':>10} {'/ numpy fold':>12}"
    )
    for row in cpu_rows(cpu_sizes, args.repeat):
        rows.append(row)
        print(
            f"{'':<16} {row['devices']:>7} {row['bytes']:>10} {row['seconds'] * 1e6:>10.1f} "
            f"{row['algbw_gb_s']:>10.3f} {row['busbw_gb_s']:>10.3f} "
            f"{row['hlort_over_numpy']:>11.2f}x"
        )
    print(
        f"{'tpusim':<20} {'chips':>5} {'bytes':>10} {'modelled us':>12} {'formula us':>11} "
        f"{'ratio':>6}"
    )
    for row in tpusim_rows(sim_sizes):
        rows.append(row)
        print(
            f"{row['collective']:<20} {row['chips']:>5} {row['bytes']:>10} "
            f"{row['modelled_us']:>12.3f} {row['formula_us']:>11.3f} "
            f"{row['modelled_over_formula']:>6.3f}"
        )
    if args.mpi:
        rows += mpi_rows(args.quick, args.ranks)
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "collectives.json"), "w") as f:
        json.dump({"cpus": os.cpu_count(), "rows": rows}, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
