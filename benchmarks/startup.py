"""Startup cost (issue 19 item 3): ``import hlort``, ``hlort --help`` and the pytest plugin.

Each number is the best of N fresh interpreters (a noisy machine only ever adds time):

- ``import hlort``: the cumulative time of the ``hlort`` line of ``python -X importtime -c
  "import hlort"`` (the package itself, without the interpreter's own start);
- ``hlort --help``: the wall time of ``python -m hlort.cli --help`` in a child process, start to
  exit, interpreter included (what a user waits for), next to ``python -c pass`` for scale (an
  editable install's import finders run in ``site`` at every start: tens of ms on their own);
- pytest plugin: what importing ``hlort.testing.pytest_plugin`` (the pytest11 entry point, loaded
  by every pytest run where hlort is installed) adds after pytest itself is imported, summed
  from ``-X importtime``'s top-level lines;
- ``heavy``: whether NumPy or ml_dtypes were imported by each (they must not be).

Goals: import <= 150 ms, --help <= 200 ms, pytest plugin <= 20 ms. They are printed as
met/missed, never asserted (timings on shared machines are not test results).
``--quick``: 3 runs each instead of 15 (the CI smoke test); ``--json FILE`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

GOALS_MS = {"import hlort": 150.0, "hlort --help": 200.0, "pytest plugin": 20.0}
HEAVY = ("numpy", "ml_dtypes")
_HEAVY_CHECK = (
    "import sys; {stmt}; "
    "print(','.join(m for m in {heavy!r} if m in sys.modules), file=sys.stderr, end='|HEAVY')"
)


def _importtime(statement: str) -> tuple[list[tuple[int, int, str]], list[str]]:
    """(level, cumulative us, module) per line of -X importtime, and the heavy modules loaded."""
    code = _HEAVY_CHECK.format(stmt=statement, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|", 2)
        if not cumulative.strip().isdigit():
            continue  # the header line
        level = (len(name) - len(name.lstrip(" "))) // 2
        lines.append((level, int(cumulative), name.strip()))
    heavy = done.stderr.rsplit("|HEAVY", 1)[0].rsplit("\n", 1)[-1]
    return lines, [m for m in heavy.split(",") if m]


def import_hlort_ms() -> tuple[float, list[str]]:
    lines, heavy = _importtime("import hlort")
    return next(us for level, us, name in lines if name == "hlort" and level <= 1) / 1e3, heavy


def pytest_plugin_ms() -> tuple[float, list[str]]:
    """What the entry point adds to a pytest process that has imported pytest already."""
    lines, heavy = _importtime("import pytest; import hlort.testing.pytest_plugin")
    first = max(i for i, (level, _, name) in enumerate(lines) if name == "pytest" and level <= 1)
    total = sum(us for level, us, _ in lines[first + 1 :] if level <= 1)
    return total / 1e3, heavy


def _wall_ms(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return (time.perf_counter() - start) * 1e3


def help_ms() -> tuple[float, list[str]]:
    _, heavy = _importtime("import hlort.cli; hlort.cli.build_parser().format_help()")
    return _wall_ms([sys.executable, "-m", "hlort.cli", "--help"]), heavy


def measure(runs: int) -> dict:
    results = {}
    for label, fn in (
        ("import hlort", import_hlort_ms),
        ("hlort --help", help_ms),
        ("pytest plugin", pytest_plugin_ms),
    ):
        samples = [fn() for _ in range(runs)]
        results[label] = {
            "best_ms": round(min(s[0] for s in samples), 2),
            "median_ms": round(sorted(s[0] for s in samples)[len(samples) // 2], 2),
            "heavy_modules": samples[0][1],
            "goal_ms": GOALS_MS[label],
        }
    results["python -c pass"] = {
        "best_ms": round(min(_wall_ms([sys.executable, "-c", "pass"]) for _ in range(runs)), 2)
    }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="3 runs each (the CI smoke test)")
    parser.add_argument("--runs", type=int, default=None, help="fresh interpreters per number")
    parser.add_argument("--json", metavar="FILE", help="write the numbers as JSON")
    args = parser.parse_args(argv)
    runs = args.runs or (3 if args.quick else 15)
    results = measure(runs)
    print(f"startup cost, best (median) of {runs} fresh interpreters")
    for label, r in results.items():
        if "goal_ms" not in r:
            print(f"  {label:<16} {r['best_ms']:8.1f} ms  (the interpreter alone, for scale)")
            continue
        verdict = "met" if r["best_ms"] <= r["goal_ms"] else "MISSED"
        heavy = ", ".join(r["heavy_modules"]) or "none"
        extra = ""
        if label == "hlort --help":
            over = r["best_ms"] - results["python -c pass"]["best_ms"]
            extra = f" [{over:.1f} ms over the bare interpreter]"
        print(
            f"  {label:<16} {r['best_ms']:8.1f} ms ({r['median_ms']:.1f})  goal <= "
            f"{r['goal_ms']:.0f} ms: {verdict}; heavy modules imported: {heavy}{extra}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": runs, "results": results}, f, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
