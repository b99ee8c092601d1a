"""Does a big matmul lose its second core to the crowded rule right after jax ran? (issue 12)

Rounds as ``make bench`` runs two rows: jax.jit calls for a while (the previous row's jax
timing), then hlort's matmul calls for a while (the next row's hlort timing), each hlort call
logged with the pool's decision (thread_pool.dispatch_counts: pooled, crowded = inline on two
CPUs, long = kept on the pool only because its chunks are long), the run-queue count it saw,
its page faults and system time (a fresh output's first touch faults slowly on a VM). Rounds
alternate between the current rule and the rule before long dispatches were exempt (the
planned parts' ``long`` flag cleared), so both see the same machine. ``--spinners N`` adds N
busy-looping processes, as a loaded machine (or XLA's spinning workers) would.

    .venv/bin/python benchmarks/crowded_matmul.py --n 2048 --rounds 8 --spinners 1
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np


def _running() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[3]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=0.3, help="each side's time a round")
    parser.add_argument("--spinners", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="only the summary")
    parser.add_argument("--quick", action="store_true", help="n 256, 2 short rounds (CI)")
    opts = parser.parse_args()
    if opts.quick:
        opts.n, opts.rounds, opts.seconds = 256, 2, 0.02
    os.environ.setdefault("HLORT_CACHE", "0")
    try:
        import jax
    except ImportError:  # hlort's rounds alone: the pool's decisions are still logged
        jax = None

    import hlort
    from hlort import Builder, shape
    from hlort_cpu import dot_split, thread_pool

    n = opts.n
    b = Builder("matmul")
    x = b.parameter(shape.array("f32", [n, n]))
    w = b.parameter(shape.array("f32", [n, n]))
    program = hlort.compile(b.build(b.dot(x, w)), "cpu").raw.program
    rng = np.random.default_rng(2)
    args = [(rng.standard_normal((n, n)) / np.sqrt(n)).astype(np.float32) for _ in range(2)]
    if jax is not None:
        f = jax.jit(lambda a, c: a @ c)
        on_device = [jax.device_put(a) for a in args]
        jax.block_until_ready(f(*on_device))
    program.run(args)
    planned = [plan[1] for plan in dot_split._PLANS.values() if plan is not None]
    marked = [ranges.long for ranges in planned]
    spinners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(opts.spinners)
    ]
    times: dict[str, list[float]] = {"long exempt": [], "old rule": []}
    decided: dict[str, dict[str, int]] = {k: {} for k in times}
    jax_times: list[float] = []
    try:
        for r in range(opts.rounds):
            rule = "long exempt" if r % 2 == 0 else "old rule"
            for ranges, long in zip(planned, marked, strict=True):
                ranges.long = long and rule == "long exempt"
            start = time.perf_counter()
            while jax is not None and time.perf_counter() - start < opts.seconds:
                t = time.perf_counter()
                jax.block_until_ready(f(*on_device))
                jax_times.append(time.perf_counter() - t)
            start = time.perf_counter()
            while time.perf_counter() - start < opts.seconds:
                before = thread_pool.dispatch_counts()
                usage = resource.getrusage(resource.RUSAGE_SELF)
                t = time.perf_counter()
                program.run(args)
                ms = (time.perf_counter() - t) * 1e3
                now = resource.getrusage(resource.RUSAGE_SELF)
                faults, sys_ms = (
                    now.ru_minflt - usage.ru_minflt,
                    (now.ru_stime - usage.ru_stime) * 1e3,
                )
                after = thread_pool.dispatch_counts()
                how = ",".join(k for k in after if after[k] != before[k]) or "none"
                decided[rule][how] = decided[rule].get(how, 0) + 1
                times[rule].append(ms)
                if not opts.quiet:
                    print(
                        f"round {r} {rule:11s} {ms:7.1f} ms  {how:7s} run queue {_running():7s}"
                        f" faults {faults:5d} system {sys_ms:5.1f} ms"
                    )
    finally:
        for ranges, long in zip(planned, marked, strict=True):
            ranges.long = long
        for p in spinners:
            p.kill()
    if jax_times:
        print(f"jax.jit matmul {n}: median {statistics.median(jax_times) * 1e3:.1f} ms")
    for rule, ts in times.items():
        if ts:
            print(
                f"hlort {rule:11s}: median {statistics.median(ts):.1f} ms, "
                f"max {max(ts):.1f}, {len(ts)} calls, dispatches {decided[rule]}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
