"""The benchmark's table and the goals of issue 12, as ratios measured in the same run."""

from __future__ import annotations

import statistics

import numpy as np

_COLUMNS = [
    ("workload", "<52"),
    ("src", "<8"),
    ("fb", ">4"),
    ("hlort ms", ">10"),
    ("jax ms", ">10"),
    ("hlort/jax", ">10"),
    ("numpy ms", ">10"),
    ("%bw", ">5"),
    ("compile ms", ">11"),
    ("jax c ms", ">9"),
    ("call ms", ">10"),
    ("err", ">9"),
]


GOALS = {"ratio": 1.0, "geomean": 0.6, "bandwidth": 0.70, "matmul": 1.1, "first_compile_ms": 100}


def print_header() -> None:
    print("".join(f"{name:{fmt}}" for name, fmt in _COLUMNS))


def _ms(seconds):
    return float("nan") if seconds is None else seconds * 1e3


def print_row(row: dict, tolerance: float) -> None:
    if "error" in row:
        print(f"{row['workload']:<52}{row['source']:<8}  {row['error']}", flush=True)
        return
    frac = row["bandwidth_fraction"]
    ratio = row["hlort_over_jax"]
    err = row["max_rel_error"]
    flag = "!" if not err <= tolerance else ""  # NaN is flagged too
    cells = [
        row["workload"],
        row["source"],
        row["fallback_count"],
        _ms(row["hlort_s"]),
        _ms(row["jax_s"]),
        float("nan") if ratio is None else ratio,
        _ms(row["numpy_s"]),
        float("nan") if frac is None else frac * 100,
        row["compile_ms"],
        float("nan") if row["jax_compile_ms"] is None else row["jax_compile_ms"],
        _ms(row["hlort_executable_call_s"]),
        f"{err:.0e}{flag}",
    ]
    digits = [None, None, "d", ".3f", ".3f", ".2f", ".3f", ".0f", ".1f", ".1f", ".3f", None]
    print(
        "".join(
            f"{cell:{fmt}{d or ''}}"
            for cell, (_, fmt), d in zip(cells, _COLUMNS, digits, strict=True)
        ),
        flush=True,
    )


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def _mark(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def _tagged(rows: list[dict], tag: str) -> dict | None:
    return next((r for r in rows if tag in r["tags"] and "error" not in r), None)


def goals(
    rows: list[dict],
    warm: dict[str, float],
    fresh: dict,
    tiny: tuple[float, float],
    tolerance: float,
    paired: dict | None = None,
) -> dict:
    """The summary: numbers and the lines that print them. ``paired``: {n: (hlort, jax)} seed
    over matmul-alone ratios timed alternating (run.py's paired_seed_ratios); where given, the
    seed goal is judged on them, the two rows' ratio printed beside."""
    ran = [r for r in rows if "error" not in r]
    failed = [r for r in rows if "error" in r and r["source"] != "skipped"]
    skipped = [r for r in rows if r["source"] == "skipped"]
    out: dict = {"lines": []}
    say = out["lines"].append
    fallbacks = sum(r["fallback_count"] for r in ran)
    out["fallbacks"], out["compile_failures"] = fallbacks, [r["workload"] for r in failed]
    with_fb = ", ".join(f"{r['workload']} {r['fallbacks']}" for r in ran if r["fallback_count"])
    say(
        f"fallbacks: {fallbacks} in {len(ran)} compiled workloads ({with_fb or 'none'}); "
        f"compile failures: {len(failed)} [{_mark(not failed and not fallbacks)}: goal 0 and 0]"
    )
    for r in ran:
        for reason in r.get("fallback_reasons") or []:
            say(f"  {r['workload']}: {reason}")
    demoted = [r for r in ran if (r.get("pool_dispatches") or {}).get("crowded")]
    if demoted:
        say(
            "rows with pool dispatches run on one thread because other threads were runnable "
            "(thread_pool.crowded; their times are not what a quiet machine gives): "
            + ", ".join(
                f"{r['workload']} {r['pool_dispatches']['crowded']} of "
                f"{sum(r['pool_dispatches'].values())}"
                for r in demoted
            )
        )
    if skipped:
        say(f"skipped ({len(skipped)}, need jax): " + ", ".join(r["workload"] for r in skipped))
    wrong = [r["workload"] for r in ran if not r["max_rel_error"] <= tolerance]
    out["wrong_results"] = wrong
    say(
        f"results vs {'jax' if any(r['jax_s'] for r in ran) else 'NumPy'} within {tolerance:g} "
        f"(relative to the largest magnitude): {len(ran) - len(wrong)} of {len(ran)}"
        + (f"; WRONG: {', '.join(wrong)}" if wrong else "")
    )
    jax_rows = [r for r in ran if r["jax_s"]]
    if jax_rows:
        ratios = [r["hlort_over_jax"] for r in jax_rows]
        g = _geomean(ratios)
        out["geomean_hlort_over_jax"] = g
        slow = [r for r in jax_rows if r["hlort_over_jax"] > GOALS["ratio"]]
        worst = max(jax_rows, key=lambda r: r["hlort_over_jax"])
        say(
            f"workloads at <= {GOALS['ratio']}x jax.jit's time: {len(jax_rows) - len(slow)} of "
            f"{len(jax_rows)}, worst {worst['workload']} {worst['hlort_over_jax']:.2f}x "
            f"[{_mark(not slow and not failed)}]"
        )
        models = [r for r in jax_rows if r["kind"] == "model"]
        if models:
            short = [
                f"{' '.join(r['workload'].split()[:2])} {r['hlort_over_jax']:.2f}x" for r in models
            ]
            say("  model workloads hlort/jax: " + ", ".join(short))
        say(
            f"geomean hlort/jax time: {g:.2f} over {len(jax_rows)} workloads "
            f"[{_mark(g <= GOALS['geomean'])}: goal <= {GOALS['geomean']}]"
        )
        c = statistics.median(r["compile_ms"] for r in jax_rows)
        j = statistics.median(r["jax_compile_ms"] for r in jax_rows)
        out["median_compile_ms"], out["median_jax_compile_ms"] = c, j
        say(f"median compile (in-process, cache off): hlort {c:.1f} ms, jax {j:.1f} ms")
    np_rows = [r for r in ran if r["numpy_s"]]
    if np_rows:
        say(f"geomean numpy/hlort: {_geomean([r['numpy_s'] / r['hlort_s'] for r in np_rows]):.2f}")
    out["bandwidth_fraction"] = {}
    for r in ran:
        if "bandwidth-goal" in r["tags"]:
            frac = r["bandwidth_fraction"]
            out["bandwidth_fraction"][r["workload"]] = frac
            say(
                f"{r['workload']}: {frac * 100:.0f}% of the copy-bandwidth floor "
                f"[{_mark(frac >= GOALS['bandwidth'])}: goal >= {GOALS['bandwidth']:.0%}]"
            )
    out["seed_over_matmul"] = {}
    for r in ran:
        for tag in r["tags"]:
            if not tag.startswith("seed-matmul-"):
                continue
            alone = _tagged(rows, "matmul-alone-" + tag.rsplit("-", 1)[1])
            if alone is None:
                continue
            rows_ratio = r["hlort_s"] / alone["hlort_s"]
            rows_jax = r["jax_s"] / alone["jax_s"] if r["jax_s"] and alone["jax_s"] else None
            pair = (paired or {}).get(tag.rsplit("-", 1)[1])
            ratio, jax_ratio = pair if pair is not None else (rows_ratio, rows_jax)
            out["seed_over_matmul"][r["workload"]] = ratio
            out.setdefault("seed_over_matmul_rows", {})[r["workload"]] = rows_ratio
            jax_part = f" (jax: {jax_ratio:.2f})" if jax_ratio is not None else ""
            how = f", calls alternating; as rows {rows_ratio:.2f}" if pair is not None else ""
            say(
                f"{r['workload']} / {alone['workload']}: {ratio:.3f}{jax_part}{how} "
                f"[{_mark(ratio <= GOALS['matmul'])}: goal <= {GOALS['matmul']}]"
            )
    out["first_compile"] = fresh
    for line in first_compile_lines(fresh):
        say(line)
    out["warm_cache_load_ms"] = warm
    if warm:
        say(
            f"second process, warm cache: median load {statistics.median(warm.values()):.2f} ms, "
            f"worst {max(warm.values()):.2f} ms ({max(warm, key=warm.get)})"
        )
    out["tiny_dispatch_us"] = tiny
    say(
        f"compiled x+1 on f32[4], NumPy in/out: {tiny[0]:.1f} us per call "
        f"({tiny[1]:.1f} us through hlort.Executable)"
    )
    return out


def first_compile_lines(fresh: dict) -> list[str]:
    """The goal line (median wall ms of hlort's first compile, and its ratio to jax's), then
    CPU time and end to end (import + compile + first execute) for both, when measured."""
    jax_first = ""
    if fresh["jax_ms"] is not None:
        ratio = fresh["hlort_ms"] / fresh["jax_ms"]
        jax_first = f", jax {fresh['jax_ms']:.0f} ms, hlort/jax {ratio:.2f}"
    ok = fresh["hlort_ms"] <= GOALS["first_compile_ms"]
    lines = [
        f"first compile in a fresh process ({fresh['program']}, {fresh['source']}): hlort "
        f"{fresh['hlort_ms']:.0f} ms{jax_first} "
        f"[{_mark(ok)}: goal <= {GOALS['first_compile_ms']} ms]"
    ]
    sides = [(name, fresh.get(name)) for name in ("hlort", "jax")]
    sides = [(name, s) for name, s in sides if s]
    if sides:
        lines.append(
            "  medians (min): "
            + "; ".join(
                f"{name} compile cpu {s['compile_cpu_ms']['median']:.0f} "
                f"({s['compile_cpu_ms']['min']:.0f}) ms, import+compile+first execute "
                f"{s['end_to_end_ms']['median']:.0f} ({s['end_to_end_ms']['min']:.0f}) ms"
                for name, s in sides
            )
        )
    return lines


def print_goals(rows, warm, fresh, tiny, tolerance, paired=None) -> dict:
    summary = goals(rows, warm, fresh, tiny, tolerance, paired)
    print()
    for line in summary["lines"]:
        print(line)
    return summary
