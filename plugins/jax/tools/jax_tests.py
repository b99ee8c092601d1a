"""Run JAX's own lax tests (../shared/jax-tests, in place) against hlort's JAX platforms.

    python plugins/jax/tools/jax_tests.py [--platforms hlort_cpu,cpu] [--files lax_test.py]
        [--cases 1] [--sample-seed S] [--workers 1] [--report out.json]

Each hlort platform runs as the class of device it models (jax_test_dut, see DUT below and
jax_test_dut.py; --own-names turns that off). Each (platform, file) runs in its own pytest
process under pytest-xdist, so a test that crashes a worker is counted as failed and the run
goes on. Prints a pass/fail/skip table per
platform and file; ``cpu`` is JAX's own CPU backend, for comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SUITE = os.path.join(ROOT, "..", "shared", "jax-tests", "tests")
FILES = ("lax_test.py", "lax_autodiff_test.py", "lax_vmap_test.py", "lax_control_flow_test.py")
PLATFORMS = ("hlort_interpreter", "hlort_cpu", "hlort_tpusim")
# The class of device JAX's tests treat each hlort platform as (jax_test_dut, see jax_test_dut.py);
# JAX's own ``cpu`` backend stays second in JAX_PLATFORMS for tests that ask for it by name.
# All three run with the CPU's expectations. hlort_tpusim too, though its DEFAULT dot/conv
# precision is bf16 like a TPU's: JAX's lax tests compare dots and convs with NumPy at HIGHEST,
# so the bf16 default costs nothing, while jax_test_dut=tpu (tried on lax_test.py -k "Dot or
# Conv") skipped 44 tests tpusim passes (dot algorithms "not supported on TPU", batched
# ragged_dot) and failed 2 that check JAX's TPU-only lowerings (chlo.ragged_dot, compiled text),
# which JAX applies to platform "tpu" only. Under its own name ~470 control-flow tests tagged
# run_on_devices("cpu") would skip.
DUT = {"hlort_interpreter": "cpu", "hlort_cpu": "cpu", "hlort_tpusim": "cpu"}


def pytest_env(
    platform: str, own_names: bool = False, sample_seed: int | None = None
) -> tuple[dict[str, str], list[str]]:
    """Environment additions and extra pytest arguments that run ``platform`` as its DUT
    (and, with ``sample_seed``, on another sample of cases: jax_test_sampling.py)."""
    env = {"JAX_PLATFORMS": platform}
    args: list[str] = []
    dut = None if own_names else DUT.get(platform)
    if dut is not None:
        env.update(JAX_PLATFORMS=f"{platform},cpu", HLORT_JAX_TEST_DUT=dut)
        args += ["-p", "jax_test_dut"]
    if sample_seed is not None:
        env["HLORT_JAX_TEST_SAMPLE_SEED"] = str(sample_seed)
        args += ["-p", "jax_test_sampling"]
    if args:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (HERE, os.environ.get("PYTHONPATH"))))
    return env, args


def _counts(xml_path: str) -> dict[str, int]:
    out = {"passed": 0, "failed": 0, "skipped": 0}
    failures: list[str] = []
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        kinds = {child.tag for child in case}
        if "skipped" in kinds:
            out["skipped"] += 1
        elif kinds & {"failure", "error"}:
            out["failed"] += 1
            failures.append(case.get("name", "?"))
        else:
            out["passed"] += 1
    out["failures"] = failures  # type: ignore[assignment]
    return out


def run_one(platform: str, name: str, args) -> dict:
    xml_path = os.path.join(args.out_dir, f"{platform}.{name}.xml")
    extra_env, plugin_args = pytest_env(platform, args.own_names, args.sample_seed)
    env = dict(os.environ, JAX_NUM_GENERATED_CASES=str(args.cases), **extra_env)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *plugin_args,
        f"--junitxml={xml_path}",
        f"--timeout={args.timeout}",
        "-n",
        str(args.workers),
        "--max-worker-restart=10000",
        os.path.join(SUITE, name),
    ]
    start = time.time()
    with open(os.path.join(args.out_dir, f"{platform}.{name}.log"), "w") as log:
        subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, check=False)
    seconds = time.time() - start
    if not os.path.exists(xml_path):
        return {"platform": platform, "file": name, "error": "no report", "seconds": seconds}
    return {"platform": platform, "file": name, "seconds": round(seconds, 1), **_counts(xml_path)}


def print_table(rows: list[dict]) -> None:
    print(f"{'platform':<18} {'file':<26} {'pass':>6} {'fail':>6} {'skip':>6} {'secs':>7}")
    for r in rows:
        if "error" in r:
            print(f"{r['platform']:<18} {r['file']:<26} {r['error']}")
            continue
        print(
            f"{r['platform']:<18} {r['file']:<26} {r['passed']:>6} {r['failed']:>6} "
            f"{r['skipped']:>6} {r['seconds']:>7.0f}"
        )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platforms", default=",".join(PLATFORMS))
    parser.add_argument("--files", default=",".join(FILES))
    parser.add_argument("--cases", type=int, default=1, help="JAX_NUM_GENERATED_CASES")
    parser.add_argument(
        "--sample-seed",
        type=int,
        default=None,
        help="sample other parameterized cases than JAX's fixed seed 42 (jax_test_sampling.py)",
    )
    parser.add_argument("--workers", type=int, default=1, help="pytest-xdist workers")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per test")
    parser.add_argument("--out-dir", default=os.path.join(ROOT, "build", "jax-tests"))
    parser.add_argument(
        "--own-names",
        action="store_true",
        help="run hlort platforms under their own names only (no jax_test_dut)",
    )
    parser.add_argument("--report", help="write the rows (with failing test names) as JSON")
    parser.add_argument(
        "--max-failures",
        type=int,
        default=None,
        help="exit 1 when a (platform, file) has more failures than this",
    )
    args = parser.parse_args(argv)
    if not os.path.isdir(SUITE):
        print(f"jax-tests: {SUITE} is missing (JAX's tests live in ../shared/jax-tests)")
        return 2
    try:
        import jax  # noqa: F401
        import xdist  # noqa: F401
    except ImportError as err:
        print(f"jax-tests: needs jax==0.10.2, absl-py, pytest-xdist, pytest-timeout ({err})")
        return 2
    os.makedirs(args.out_dir, exist_ok=True)
    rows = []
    for platform in args.platforms.split(","):
        for name in args.files.split(","):
            rows.append(run_one(platform, name, args))
            print_table(rows[-1:])
            sys.stdout.flush()
    print()
    print_table(rows)
    if args.report:
        with open(args.report, "w") as f:
            json.dump(rows, f, indent=1)
    if args.max_failures is not None and any(
        "error" in r or r["failed"] > args.max_failures for r in rows
    ):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
