"""``make bench``: hlort-cpu vs NumPy eager (and jax.jit when installed), side by side.

"hlort ms" is the compiled program on NumPy arrays (the plugin's launch path); "call ms" is
the same through ``hlort.Executable.__call__`` (adds the core runtime's buffer transfers).
Steady-state time is the median of repeated calls after a warm-up; compile time is the first
``hlort.compile`` with the compile cache off (and jax's first call). The machine's memory
bandwidth is measured with a large copy; memory-bound workloads report their fraction of the
bandwidth floor (min bytes / bandwidth). Prints a table and writes benchmarks/results/*.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

from workloads import all_workloads  # noqa: E402


def timeit(fn, *args, min_time: float = 0.3, max_reps: int = 200) -> float:
    fn(*args)
    times = []
    start = time.perf_counter()
    while (time.perf_counter() - start < min_time or len(times) < 3) and len(times) < max_reps:
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bandwidth() -> float:
    """Bytes/s of a 256 MiB copy (read + write counted)."""
    src = np.ones(64 << 20, np.float32)
    dst = np.empty_like(src)
    t = timeit(lambda: np.copyto(dst, src), min_time=0.5)
    return 2 * src.nbytes / t


def tiny_dispatch_us() -> float:
    import hlort
    from hlort import Builder, shape

    b = Builder("plus_one")
    x = b.parameter(shape.array("f32", [4]))
    exe = hlort.compile(b.build(b.add(x, b.broadcast(b.constant(np.float32(1)), [4], []))), "cpu")
    a = np.ones(4, np.float32)
    via_runtime = timeit(exe, a, min_time=0.3, max_reps=20000) * 1e6
    direct = timeit(exe.raw.program.run, [a], min_time=0.3, max_reps=20000) * 1e6
    return direct, via_runtime


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def _summary(rows: list[dict], warm: dict[str, float]) -> dict:
    """The issue's headline numbers: JAX ratio, compile times, warm-cache loads."""
    out: dict = {"lines": []}
    jax_rows = [r for r in rows if r["jax_s"]]
    if jax_rows:
        g = _geomean([r["hlort_s"] / r["jax_s"] for r in jax_rows])
        out["geomean_hlort_over_jax"] = g
        out["lines"].append(f"geomean hlort/jax time: {g:.2f} (below 1 = faster than jax)")
        c = statistics.median(r["compile_ms"] for r in jax_rows)
        j = statistics.median(r["jax_compile_ms"] for r in jax_rows)
        out["median_compile_ms"], out["median_jax_compile_ms"] = c, j
        out["lines"].append(f"median compile: hlort {c:.1f} ms, jax {j:.1f} ms")
    out["warm_cache_load_ms"] = warm
    out["lines"].append(f"second process, warm cache: median load "
                        f"{statistics.median(warm.values()):.2f} ms, worst "
                        f"{max(warm.values()):.2f} ms ({max(warm, key=warm.get)})")  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    parser.add_argument("--only", default="", help="substring of workload names")
    opts = parser.parse_args()
    os.environ.setdefault("HLORT_CACHE", "0")
    import hlort

    try:
        import jax

        jax_jit = jax.jit
    except ImportError:
        jax_jit = None
    # Before this process holds ~1 GB of inputs: right after freeing that much, the VM faults
    # fresh pages slowly for a while, and the measuring children would time that.
    from warm_cache import measure

    warm = measure(quick=False)
    bw = bandwidth()
    rows = []
    print(f"memory bandwidth (copy): {bw / 1e9:.1f} GB/s; jax: {'yes' if jax_jit else 'no'}")
    header = (f"{'workload':<34}{'hlort ms':>10}{'numpy ms':>10}{'jax ms':>9}{'np/hlort':>9}"
              f"{'jax/hlort':>10}{'%bw':>6}{'compile ms':>11}{'jax c ms':>9}"
              f"{'call ms':>9}")  # fmt: skip
    print(header)
    for w in all_workloads(opts.quick):
        if opts.only and opts.only not in w.name:
            continue
        t = time.perf_counter()
        exe = hlort.compile(w.module, "cpu")
        compile_ms = (time.perf_counter() - t) * 1e3
        program = getattr(exe.raw, "program", None)
        t_call = timeit(exe, *w.inputs)
        t_h = timeit(program.run, list(w.inputs)) if program is not None else t_call
        t_np = timeit(w.numpy_fn, *w.inputs)
        t_jax = jc_ms = None
        if jax_jit is not None and w.jax_fn is not None:
            f = jax_jit(w.jax_fn)
            # Inputs live on the device first, as hlort's do: time the program, not transfers.
            on_device = [jax.device_put(a) for a in w.inputs]
            t = time.perf_counter()
            f(*on_device).block_until_ready()
            jc_ms = (time.perf_counter() - t) * 1e3
            t_jax = timeit(lambda *a, f=f: f(*a).block_until_ready(), *on_device)
        frac = (w.min_bytes / bw) / t_h if w.min_bytes else None
        stats = exe.raw.stats() if hasattr(exe.raw, "stats") else {}
        row = {"workload": w.name, "hlort_s": t_h, "numpy_s": t_np, "jax_s": t_jax,
               "numpy_over_hlort": t_np / t_h, "jax_over_hlort": t_jax / t_h if t_jax else None,
               "bandwidth_fraction": frac, "compile_ms": compile_ms, "jax_compile_ms": jc_ms,
               "fallback_count": stats.get("fallback_count"),
               "hlort_executable_call_s": t_call}  # fmt: skip
        rows.append(row)
        print(f"{w.name:<34}{t_h * 1e3:>10.3f}{t_np * 1e3:>10.3f}"
              f"{(t_jax * 1e3 if t_jax else float('nan')):>9.3f}{t_np / t_h:>9.2f}"
              f"{(t_jax / t_h if t_jax else float('nan')):>10.2f}"
              f"{(frac * 100 if frac else float('nan')):>6.0f}{compile_ms:>11.1f}"
              f"{(jc_ms if jc_ms else float('nan')):>9.1f}{t_call * 1e3:>9.3f}",
              flush=True)  # fmt: skip
    tiny, tiny_runtime = tiny_dispatch_us()
    print(f"compiled x+1 on f32[4], NumPy in/out: {tiny:.1f} us per call "
          f"({tiny_runtime:.1f} us through hlort.Executable)")
    ratios = [r["numpy_over_hlort"] for r in rows]
    print(f"geomean numpy/hlort: {float(np.exp(np.mean(np.log(ratios)))):.2f}")
    summary = _summary(rows, warm)
    for line in summary["lines"]:
        print(line)
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results",
                        time.strftime("bench-%Y%m%d-%H%M%S.json"))  # fmt: skip
    with open(path, "w") as f:
        json.dump({"bandwidth_bytes_per_s": bw, "tiny_dispatch_us": tiny, "rows": rows,
                   "summary": summary}, f, indent=2)  # fmt: skip
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
