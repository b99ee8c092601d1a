"""Every benchmark script runs in its quick mode (tiny sizes, one repeat), so none rots.

``run.py --quick --no-jax`` always runs (builder modules, NumPy references); the JAX-lowered
rows run only when jax is installed (``make bench`` installs it) and are skipped, saying so,
otherwise. Timings are not asserted (noisy machines); what must hold is that each script
finishes, that every workload gets a row, and that hlort's results match the reference.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
TOLERANCE = 1e-3  # run.py's: max |hlort - reference| / max |reference| per output
HELPER_MODULES = {
    "workloads.py",
    "model_workloads.py",
    "sources.py",
    "child_compile.py",
    "report.py",
}
# every other script runs with --quick (run.py has its own tests below); a new one is picked up
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.name not in HELPER_MODULES | {"run.py"})
# the JAX-lowered programs go through warm_cache and fresh_compile in run.py's jax test
EXTRA_ARGS = {
    "tpusim_speed.py": ["--tiled"],
    "warm_cache.py": ["--no-jax"],
    "fresh_compile.py": ["--no-jax"],
}
HAS_JAX = importlib.util.find_spec("jax") is not None
NEEDS_JAX = {"jax_dispatch.py"}
NEEDS_GPU = {"cuda_bench.py"}  # plugins/cuda/tests/test_cuda_bench_plumbing.py: on a fake driver
NEEDS_MPI = {"allreduce_mpi.py"}  # starts ranks under mpirun (the [mpi] extra)
# test_collectives_bench_quick runs these and reads their JSON
CHECKED_BELOW = {"collectives_bench.py"}


def _cuda_works() -> bool:
    try:
        from hlort_cuda.plugin import CudaPlugin
    except ImportError:
        return False
    return CudaPlugin().probe().available


def _run(script: str, *args: str, tmp_path: Path) -> str:
    # fallbacks are counted, not refused, whatever the suite's own policy is
    env = dict(os.environ, HLORT_CACHE_DIR=str(tmp_path / "cache"), HLORT_FALLBACK="allow")
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _quick_workload_names(with_models: bool) -> list[str]:
    sys.path.insert(0, str(BENCH))
    try:
        from workloads import all_workloads, kernel_workloads

        return [w.name for w in (all_workloads(True) if with_models else kernel_workloads(True))]
    finally:
        sys.path.remove(str(BENCH))


def _rows(tmp_path: Path, *args: str) -> tuple[str, dict]:
    results = tmp_path / "results"
    out = _run("run.py", "--results", str(results), *args, tmp_path=tmp_path)
    (path,) = results.glob("bench-*.json")
    return out, json.loads(path.read_text())


def test_the_scripts_are_found():
    expected = {
        "compile_time.py",
        "parse_speed.py",
        "tpusim_speed.py",
        "warm_cache.py",
        "fresh_compile.py",
        "collectives_bench.py",
    }
    assert expected <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_runs_quick(script, tmp_path):
    if script == "tpusim_speed.py" and importlib.util.find_spec("hlort_tpusim") is None:
        pytest.skip("the tpusim plugin is not installed here")
    if script in NEEDS_JAX and not (HAS_JAX and importlib.util.find_spec("hlort_jax")):
        pytest.skip(f"{script} measures the hlort-jax bridge: needs jax and hlort-jax")
    if script in NEEDS_GPU and not _cuda_works():
        pytest.skip(
            f"{script} times an NVIDIA GPU: none here (its plumbing is tested on a fake "
            f"driver in plugins/cuda/tests)"
        )
    if script in NEEDS_MPI:
        from hlort.distributed.process_env import mpi_available

        if (reason := mpi_available()) is not None:
            pytest.skip(f"{script} runs MPI ranks: {reason}")
    if script in CHECKED_BELOW:
        pytest.skip(f"{script} runs in its own test below, which also checks its results")
    assert _run(script, *EXTRA_ARGS.get(script, []), tmp_path=tmp_path).strip()


def test_collectives_bench_quick(tmp_path):
    """cpu all-reduce rows on 2 and 4 devices (each checked bitwise against NumPy's fold by the
    script), and tpusim's modelled ring times equal to the analytic formula."""
    for plugin in ("hlort_cpu", "hlort_tpusim"):
        if importlib.util.find_spec(plugin) is None:
            pytest.skip(f"{plugin} is not installed here")
    _run("collectives_bench.py", "--results", str(tmp_path / "results"), tmp_path=tmp_path)
    rows = json.loads((tmp_path / "results" / "collectives.json").read_text())["rows"]
    cpu = [r for r in rows if r["backend"] == "cpu"]
    assert sorted({r["devices"] for r in cpu}) == [2, 4]
    assert all(r["seconds"] > 0 and r["busbw_gb_s"] > 0 for r in cpu), cpu
    sim = [r for r in rows if r["backend"] == "tpusim"]
    assert {r["collective"] for r in sim} == {
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "collective-permute",
    }
    for r in sim:  # the same terms summed in another order: float rounding only
        assert r["modelled_over_formula"] == pytest.approx(1.0, rel=1e-9), r


def test_run_quick_with_builder_modules(tmp_path):
    out, result = _rows(tmp_path, "--no-jax")
    rows = {r["workload"]: r for r in result["rows"]}
    assert list(rows) == _quick_workload_names(with_models=True)
    for name, row in rows.items():
        if row["kind"] == "model":
            assert row["source"] == "skipped" and "needs jax" in row["error"], row
            continue
        assert row["source"] == "builder", row
        assert "error" not in row, row
        assert isinstance(row["fallback_count"], int) and row["fallback_count"] >= 0, row
        assert row["max_rel_error"] <= TOLERANCE, (name, row["max_rel_error"])
        assert set(row["pool_dispatches"]) == {"pooled", "crowded", "long"}, row
    assert "first compile in a fresh process" in out and "fallbacks:" in out
    _check_seed_pairs(out, result)


def _check_seed_pairs(out: str, result: dict) -> None:
    """The seed goal is judged on the seed and the matmul alone timed alternating, and the two
    rows' ratio is printed beside it."""
    summary = result["summary"]
    seeds = [r["workload"] for r in result["rows"] if any("seed-matmul" in t for t in r["tags"])]
    assert seeds and set(summary["seed_over_matmul"]) == set(seeds)
    assert set(summary["seed_over_matmul_rows"]) == set(seeds)
    for name in seeds:
        assert summary["seed_over_matmul"][name] > 0, name
    assert out.count("calls alternating; as rows") == len(seeds)


@pytest.mark.skipif(
    not HAS_JAX,
    reason="jax is not installed: the JAX-lowered rows are not run "
    "(make bench installs the bench extra)",
)
def test_run_quick_with_jax_lowerings(tmp_path):
    out, result = _rows(tmp_path)
    rows = {r["workload"]: r for r in result["rows"]}
    assert list(rows) == _quick_workload_names(with_models=True)
    for name, row in rows.items():
        assert row["source"] == "jax", row
        if "error" in row:  # a compile failure is reported in its row, never a crash
            assert isinstance(row["error"], str) and row["error"].strip(), row
            continue
        assert row["jax_s"] > 0 and row["hlort_over_jax"] > 0, row
        assert row["max_rel_error"] <= TOLERANCE, (name, row["max_rel_error"])
    _check_seed_pairs(out, result)


def test_report_names_rows_demoted_by_a_crowded_machine():
    """A row whose pool dispatches ran on one thread (other threads runnable) says so: its time
    is not a quiet machine's, and the summary must not hide that."""
    sys.path.insert(0, str(BENCH))
    try:
        import report
    finally:
        sys.path.remove(str(BENCH))
    row = {
        "workload": "matmul 2048 (alone)",
        "kind": "kernel",
        "source": "jax",
        "tags": [],
        "fallback_count": 0,
        "fallbacks": {},
        "max_rel_error": 0.0,
        "jax_s": 0.05,
        "hlort_s": 0.05,
        "hlort_over_jax": 1.0,
        "compile_ms": 1.0,
        "jax_compile_ms": 1.0,
        "numpy_s": None,
    }
    quiet = dict(row, pool_dispatches={"pooled": 9, "crowded": 0, "long": 0})
    crowded = dict(row, pool_dispatches={"pooled": 7, "crowded": 2, "long": 0})
    fresh = {"jax_ms": None, "hlort_ms": 90.0, "program": "softmax", "source": "jax"}
    said = report.goals([quiet], {}, fresh, (0.0, 0.0), TOLERANCE)["lines"]
    assert not any("run on one thread" in line for line in said)
    said = report.goals([crowded], {}, fresh, (0.0, 0.0), TOLERANCE)["lines"]
    assert any("matmul 2048 (alone) 2 of 9" in line for line in said), said
