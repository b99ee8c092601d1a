"""``make bench``: hlort-cpu vs jax.jit on the same program, with NumPy eager alongside.

With jax installed, each workload's hlort side compiles JAX's own lowering of the very function
``jax.jit`` runs (sources.py); without jax the builder-made modules stand in and the model
workloads are skipped; the "src" column says which. "hlort ms" is the compiled program on
NumPy arrays (the plugin's launch path), "call ms" the same through ``hlort.Executable``;
jax runs on device-resident inputs; times are medians after a warm-up. Fallbacks are allowed
(``HLORT_FALLBACK=allow`` unless set) and counted from the executable: "fb" is how many
instructions ran on the interpreter. Every program is first compiled in a guarded child process
(child_compile.py), so a compile that fails, hangs or exhausts memory is that row's error.
It ends with the issue's goals as ratios measured in this run (report.py) and writes
benchmarks/results/bench-*.json. ``--quick``: tiny sizes, one repeat (the CI smoke test).

hlort and jax are timed in separate blocks, never with their calls alternating: each call would
then start while the other side's pool threads still spin (XLA's Eigen pool, hlort's spin pool),
and hlort's crowded rule runs a dispatch that finds other runnable threads on one thread
(matmul 512, tried: 300 of 300 dispatches crowded alternating, none in blocks). Two hlort
programs are compared alternating (:func:`paired_ratio`): they share one pool.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from report import print_goals, print_header, print_row  # noqa: E402
from sources import SKIPPED, jitted, source_of  # noqa: E402
from workloads import Workload, all_workloads, jax  # noqa: E402

TOLERANCE = 1e-3  # max |hlort - reference| / max |reference|, per output


class Timer:
    """Median of repeated calls after a warm-up (quick: the warm-up and one call)."""

    def __init__(self, quick: bool):
        self.min_time, self.min_reps, self.max_reps = (0.0, 1, 1) if quick else (0.3, 3, 200)

    def __call__(self, fn, *args, min_time: float | None = None, max_reps: int | None = None):
        min_time = self.min_time if min_time is None else min_time
        max_reps = self.max_reps if max_reps is None or self.max_reps == 1 else max_reps
        fn(*args)
        times: list[float] = []
        start = time.perf_counter()
        while (time.perf_counter() - start < min_time or len(times) < self.min_reps) and len(
            times
        ) < max_reps:
            t = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t)
        return statistics.median(times)


def bandwidth(timer: Timer, quick: bool) -> float:
    """Bytes/s of a large copy (read + write counted): 256 MiB, 4 MiB when quick."""
    src = np.ones((1 << 20) if quick else (64 << 20), np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / timer(lambda: np.copyto(dst, src), min_time=0.5)


def tiny_dispatch_us(timer: Timer) -> tuple[float, float]:
    import hlort
    from hlort import Builder, shape

    b = Builder("plus_one")
    x = b.parameter(shape.array("f32", [4]))
    exe = hlort.compile(b.build(b.add(x, b.broadcast(b.constant(np.float32(1)), [4], []))), "cpu")
    a = np.ones(4, np.float32)
    direct = timer(exe.raw.program.run, [a], max_reps=20000) * 1e6
    return direct, timer(exe, a, max_reps=20000) * 1e6


def _relative_error(outs, refs) -> float:
    worst = 0.0
    for got, want in zip(outs, refs, strict=True):
        got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
        if want.size:
            scale = max(float(np.max(np.abs(want))), 1e-30)
            worst = max(worst, float(np.max(np.abs(got - want))) / scale)
    return worst


def paired_ratio(first, second, quick: bool) -> float:
    """Median time of ``first()`` over the median of ``second()``, calls alternating (after a
    warm-up of each) for at least 1 s: a ratio of two programs measured as two separate rows
    takes each row's slow and fast spells as the program's (the seed and the matmul alone, same
    code, same quiet machine: 1.09-1.27 as rows, 1.10 +- 0.01 alternating)."""
    first(), second()
    a: list[float] = []
    b: list[float] = []
    start = time.perf_counter()
    while len(a) < (1 if quick else 5) or (not quick and time.perf_counter() - start < 1.0):
        for fn, times in ((first, a), (second, b)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        if len(a) >= 400:
            break
    return statistics.median(a) / statistics.median(b)


def paired_seed_ratios(kept: dict, quick: bool) -> dict:
    """{n: (hlort ratio, jax ratio or None)}: the seed's program at n over the matmul alone at
    n, each side's two programs timed alternating (:func:`paired_ratio`)."""
    out = {}
    for tag, seed in kept.items():
        if not tag.startswith("seed-matmul-"):
            continue
        n = tag.rsplit("-", 1)[1]
        alone = kept.get("matmul-alone-" + n)
        if alone is None:
            continue
        hlort_ratio = paired_ratio(seed["hlort"], alone["hlort"], quick)
        jax_ratio = None
        if seed["jax"] is not None and alone["jax"] is not None:
            jax_ratio = paired_ratio(seed["jax"], alone["jax"], quick)
        out[n] = (hlort_ratio, jax_ratio)
    return out


def _dispatch_counts() -> dict[str, int]:
    """The cpu pool's dispatch decisions so far ({} where hlort_cpu is not importable): a row
    whose dispatches were demoted to one thread by a crowded machine shows it in the table."""
    try:
        from hlort_cpu.thread_pool import dispatch_counts
    except ImportError:
        return {}
    return dispatch_counts()


def _counts_since(before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in _dispatch_counts().items()}


def _pair_tag(w: Workload) -> str | None:
    return next((t for t in w.tags if t.startswith(("seed-matmul-", "matmul-alone-"))), None)


def measure(w: Workload, source, timer: Timer, bw: float, kept: dict | None = None) -> dict:
    """One row: compile (cache off), time hlort, NumPy and jax, check hlort's result. A seed or
    matmul-alone workload leaves its timed calls in ``kept`` for :func:`paired_seed_ratios`."""
    import hlort

    row = {"workload": w.name, "kind": w.kind, "source": source.label, "tags": list(w.tags)}
    t = time.perf_counter()
    exe = hlort.compile(source.program, "cpu")
    row["compile_ms"] = (time.perf_counter() - t) * 1e3
    stats = exe.raw.stats()
    row["fallback_count"], row["fallbacks"] = stats["fallback_count"], stats["fallback"]
    row["fallback_reasons"] = stats.get("fallback_reasons", [])  # with HLORT_FALLBACK
    inputs = w.inputs()
    program = exe.raw.program
    outs = program.run(list(inputs))
    before = _dispatch_counts()
    row["hlort_s"] = timer(program.run, list(inputs))
    row["pool_dispatches"] = _counts_since(before)
    row["hlort_executable_call_s"] = timer(exe, *inputs)
    row["numpy_s"] = timer(w.numpy_fn, *inputs) if w.numpy_fn is not None else None
    row["jax_s"] = row["jax_compile_ms"] = None
    if source.label == "jax":
        f = jitted(w)
        on_device = [jax.device_put(a) for a in inputs]  # time the program, not transfers
        t = time.perf_counter()
        refs = jax.block_until_ready(f(*on_device))
        row["jax_compile_ms"] = (time.perf_counter() - t) * 1e3
        row["jax_s"] = timer(lambda *a: jax.block_until_ready(f(*a)), *on_device)
        refs = jax.tree_util.tree_leaves(refs)
    else:
        refs = [w.numpy_fn(*inputs)]
    tag = _pair_tag(w)
    if kept is not None and tag is not None:
        args = list(inputs)
        kept[tag] = {
            "hlort": lambda: program.run(args),
            "jax": (lambda: jax.block_until_ready(f(*on_device))) if row["jax_s"] else None,
        }
    row["max_rel_error"] = _relative_error(outs, refs)
    row["hlort_over_jax"] = row["hlort_s"] / row["jax_s"] if row["jax_s"] else None
    row["bandwidth_fraction"] = (w.min_bytes / bw) / row["hlort_s"] if w.min_bytes else None
    return row


def _error_row(w: Workload, source, why: str) -> dict:
    return {
        "workload": w.name,
        "kind": w.kind,
        "source": source.label,
        "error": why,
        "tags": list(w.tags),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (CI)")
    parser.add_argument("--only", default="", help="substring of workload names")
    parser.add_argument(
        "--no-jax",
        action="store_true",
        help="builder modules and NumPy only, as when jax is absent",
    )
    parser.add_argument(
        "--results",
        default=os.path.join(os.path.dirname(__file__), "results"),
        help="folder for the JSON results",
    )
    opts = parser.parse_args()
    os.environ.setdefault("HLORT_CACHE", "0")
    os.environ.setdefault("HLORT_FALLBACK", "allow")
    from fresh_compile import measure as fresh_compile
    from warm_cache import measure as warm_cache

    import hlort

    timer = Timer(opts.quick)
    workloads = [w for w in all_workloads(opts.quick) if opts.only in w.name]
    use_jax = jax is not None and not opts.no_jax
    sources = {w.name: source_of(w, use_jax) for w in workloads}
    jax_says = (
        jax.__version__
        if use_jax
        else f"{'not installed' if jax is None else 'off'}: builder modules, models skipped"
    )
    print(f"jax: {jax_says}; fallbacks: {os.environ['HLORT_FALLBACK']}, counted")
    # The children run before this process allocates the large inputs: right after freeing
    # ~1 GB, the VM faults fresh pages slowly for a while, and the children would time that.
    programs = [(n, s.program) for n, s in sources.items() if s.program is not None]
    warm, compile_errors = warm_cache(programs)
    fresh = fresh_compile(opts.quick, use_jax)
    bw = bandwidth(timer, opts.quick)
    print(f"memory bandwidth (copy): {bw / 1e9:.1f} GB/s")
    print_header()
    rows = []
    kept: dict = {}
    for w in workloads:
        source = sources[w.name]
        if source.label == SKIPPED or w.name in compile_errors:
            why = source.why if source.label == SKIPPED else compile_errors[w.name]
            row = _error_row(w, source, why)
        else:
            try:
                row = measure(w, source, timer, bw, kept)
            except hlort.HlortError as err:  # compiled in the child, failed here: say so
                row = _error_row(w, source, str(err)[:300])
        rows.append(row)
        print_row(row, TOLERANCE)
    paired = paired_seed_ratios(kept, opts.quick)
    kept.clear()
    tiny = tiny_dispatch_us(timer)
    summary = print_goals(rows, warm, fresh, tiny, TOLERANCE, paired)
    os.makedirs(opts.results, exist_ok=True)
    path = os.path.join(opts.results, time.strftime("bench-%Y%m%d-%H%M%S.json"))
    with open(path, "w") as f:
        json.dump(
            {
                "bandwidth_bytes_per_s": bw,
                "jax": jax.__version__ if use_jax else None,
                "quick": opts.quick,
                "rows": rows,
                "summary": summary,
            },
            f,
            indent=2,
        )
    print(f"saved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
