"""How fast the tpusim simulator runs (host wall time), next to what it models (device time).

The issue's bar: a 2048x2048x2048 matmul simulates in <= 2 s on the 2-core CI machine. Measured
here, never in a test. For each case it prints the compile time, the simulation wall time (the
median of ``--repeat`` launches after one warm-up, transfers excluded), the modelled device time
and matrix-unit utilization, and writes benchmarks/results/tpusim_speed.json.

    .venv/bin/python benchmarks/tpusim_speed.py [--repeat 3] [--tiled] [--quick]

``--tiled`` also times the simulator with ``bulk_simulation=False`` (every tile instruction on
its data) to show what the bulk matmul path saves. ``--quick``: 64- and 128-sized cases, one
launch (the CI smoke test).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import ml_dtypes
import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers
from hlort.plugin.options import CompileOptions
from hlort.runtime.compile import run_core_passes
from hlort_tpusim.plugin import TpuSimPlugin


def matmul(n: int, dtype: str):
    b = Builder(f"matmul_{n}_{dtype}")
    x = b.parameter(shape.array(dtype, [n, n]))
    y = b.parameter(shape.array(dtype, [n, n]))
    return b.build(b.dot_general(x, y, DotDimensionNumbers((1,), (0,)), preferred="f32"))


def elementwise(n: int):
    b = Builder(f"exp_mul_add_{n}")
    x = b.parameter(shape.array("f32", [n, n]))
    y = b.parameter(shape.array("f32", [n, n]))
    return b.build(b.add(b.multiply(b.exp(x), y), x))


def cases(quick: bool) -> list[tuple]:
    small, big = (64, 128) if quick else (1024, 2048)
    return [
        (f"matmul {small}^3 bf16", lambda: matmul(small, "bf16"), (small, small), "bf16"),
        (f"matmul {big}^3 bf16", lambda: matmul(big, "bf16"), (big, big), "bf16"),
        (f"matmul {big}^3 f32 (DEFAULT)", lambda: matmul(big, "f32"), (big, big), "f32"),
        (f"exp(x)*y+x {big}^2 f32", lambda: elementwise(big), (big, big), "f32"),
    ]


def measure(client, module, dims, dtype, repeat: int) -> dict:
    start = time.perf_counter()
    options = CompileOptions()
    exe = client.compile(run_core_passes(module.clone(), options, client), options)
    compile_s = time.perf_counter() - start
    rng = np.random.default_rng(0)
    np_dtype = ml_dtypes.bfloat16 if dtype == "bf16" else np.float32
    dev = client.devices()[0]
    bufs = [
        client.buffer_from_host(rng.standard_normal(dims).astype(np_dtype), dev) for _ in range(2)
    ]
    for b in bufs:
        b.ready_event().wait()
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        outs = exe.execute([bufs])[0]
        for o in outs:
            o.ready_event().wait()
        times.append(time.perf_counter() - start)
        for o in outs:
            o.delete()
    profile = exe.last_profile
    return {
        "compile_s": round(compile_s, 4),
        "simulate_s": round(statistics.median(times[1:]), 4),
        "device_us": round(profile.seconds * 1e6, 2),
        "mxu_utilization": round(profile.mxu_utilization, 4),
        "hbm_bytes": profile.hbm_bytes,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tiled", action="store_true", help="also time bulk_simulation=False")
    parser.add_argument("--quick", action="store_true", help="small cases, one launch (CI)")
    parser.add_argument(
        "--results",
        default=os.path.join(os.path.dirname(__file__), "results"),
        help="folder for tpusim_speed.json",
    )
    args = parser.parse_args()
    if args.quick:
        args.repeat = 1
    modes = [("bulk", True)] + ([("tiled", False)] if args.tiled else [])
    results = []
    print(
        f"{'case':<30} {'mode':<6} {'compile s':>9} {'simulate s':>10} {'device us':>10} "
        f"{'MXU util':>8}"
    )
    for mode, bulk in modes:
        client = TpuSimPlugin().create_client({"bulk_simulation": bulk})
        for name, build, dims, dtype in cases(args.quick):
            row = {"case": name, "mode": mode, **measure(client, build(), dims, dtype, args.repeat)}
            results.append(row)
            print(
                f"{name:<30} {mode:<6} {row['compile_s']:>9.3f} {row['simulate_s']:>10.3f} "
                f"{row['device_us']:>10.1f} {row['mxu_utilization'] * 100:>7.1f}%"
            )
        client.close()
    os.makedirs(args.results, exist_ok=True)
    with open(os.path.join(args.results, "tpusim_speed.json"), "w") as f:
        json.dump({"cpus": os.cpu_count(), "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
