"""Kernels whose machine code calls compiler-rt helpers load and run; nothing aborts the process.

LLVM lowers f64 -> f16 (and, on CPUs without F16C or AVX512-BF16, more conversions) to calls of
compiler-rt functions the Python process does not have. MCJIT then either patched the call to
address 0 (f16 atan2 segfaulted when run) or aborted the whole process at the next load
("LLVM ERROR: Symbol not found: __truncdfhf2"). The JIT now provides those helpers and checks
every object's undefined symbols before loading it.

The conversion test runs in a fresh interpreter so that it really compiles every pair after
other modules in one process, and so that a regression shows as a failed test rather than a
dead test run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort.text import parse_module  # noqa: E402

FLOATS = ["f64", "f32", "f16", "bf16", "f8e4m3fn", "f8e5m2"]

_CONVERSIONS_SCRIPT = textwrap.dedent("""
    import itertools, sys
    import numpy as np
    import hlort
    from hlort.runtime.sample_inputs import random_inputs
    from hlort.text import parse_module

    FLOATS = sys.argv[1].split(",")
    def module(src, dst, n=64):
        return (f"HloModule convert_{src}_{dst}\\nENTRY e {{\\n p = {src}[{n}] parameter(0)\\n"
                f" ROOT c = {dst}[{n}] convert(p)\\n}}")
    # other modules first: the defect showed only once earlier objects were loaded
    for op in ("add", "multiply", "atan2"):
        for t in ("f32", "f16", "bf16"):
            text = (f"HloModule warm_{op}_{t}\\nENTRY e {{\\n p = {t}[8] parameter(0)\\n"
                    f" ROOT r = {t}[8] {op}(p, p)\\n}}")
            exe = hlort.compile(text, "cpu")
            exe(*random_inputs(exe.input_shapes, seed=1))
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 65504.0, 65520.0, 6e-8, 3e-8,
               1e-45, 3.4e38, 1e300, -1e-300, 448.0, 464.0, 57344.0, 61440.0, 2.0**-9, 2.0**-10]
    rng = np.random.default_rng(0)
    bad = []
    for src, dst in itertools.permutations(FLOATS, 2):
        exe = hlort.compile(module(src, dst), "cpu")
        stats = exe.raw.stats()
        assert stats["fallback_count"] == 0, (src, dst, stats)
        dtype = exe.input_shapes[0].dtype.numpy
        wide = np.concatenate([special, rng.standard_normal(64 - len(special)) * 10.0 **
                               rng.integers(-12, 12, 64 - len(special))])
        with np.errstate(over="ignore", invalid="ignore"):
            x = wide.astype(dtype)
            got = exe(x)
            want = hlort.evaluate(parse_module(module(src, dst)), [x])
        g, w = got.astype(np.float64), want.astype(np.float64)
        same = (g == w) | (np.isnan(g) & np.isnan(w))
        same &= np.signbit(g) == np.signbit(w)
        same |= np.isnan(g) & np.isnan(w)
        if not same.all():
            bad.append((src, dst, x[~same][:4], got[~same][:4], want[~same][:4]))
    print("pairs", len(list(itertools.permutations(FLOATS, 2))), "mismatches", bad)
    sys.exit(1 if bad else 0)
""")


def test_every_float_conversion_pair_compiles_and_matches_in_one_process(tmp_path):
    env = {**os.environ, "HLORT_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", _CONVERSIONS_SCRIPT, ",".join(FLOATS)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-4000:])
    assert f"pairs {len(FLOATS) * (len(FLOATS) - 1)} mismatches []" in proc.stdout


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_narrow_atan2_runs_and_matches_the_interpreter(dtype):
    """atan2 of half types is computed in f64 and rounded once: the f64 -> f16 rounding is a
    compiler-rt call, and f16 atan2 used to crash the process when run."""
    text = (
        f"HloModule atan2_{dtype}\nENTRY e {{\n p = {dtype}[16] parameter(0)\n"
        f" q = {dtype}[16] parameter(1)\n ROOT c = {dtype}[16] atan2(p, q)\n}}"
    )
    exe = hlort.compile(text, "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    dt = exe.input_shapes[0].dtype.numpy
    y = np.array(
        [1, -1, 0.5, 2, 0.0, -0.0, 0.0, -0.0, np.inf, -np.inf, np.inf, np.nan, 1, 3e-5, -7, 60000],
        np.float64,
    ).astype(dt)
    x = np.array(
        [1, -1, 0.5, 2, 0.0, 0.0, -0.0, -1, np.inf, np.inf, -2, 1, np.nan, -3e-5, 0, -0.001],
        np.float64,
    ).astype(dt)
    got = exe(y, x).astype(np.float64)
    want = hlort.evaluate(parse_module(text), [y, x]).astype(np.float64)
    # f64 evaluation rounded once on both sides: equal, or one narrow ulp apart on a tie
    ulp = np.spacing(np.abs(want).astype(dt)).astype(np.float64)
    close = (np.abs(got - want) <= ulp) & (np.signbit(got) == np.signbit(want))
    assert (close | (np.isnan(got) & np.isnan(want))).all(), (got, want)
