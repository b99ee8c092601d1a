"""hlort's HloModuleProtos run on XLA's CPU (JAX's own backend) and compute what they should.

The work happens in ``xla_cpu_runner.py`` in a subprocess (XLA aborts on some programs it does
not support). Conformance cases: the proto's outputs equal, bit for bit, those of XLA's own
parse of hlort's HLO text on the same inputs. Real programs optimized by hlort: the proto's
outputs match JAX's (``expected.npz``) as closely as hlort's own backends must
(tests/real_programs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax", reason="running protos on XLA's CPU needs jax[cpu]")
pytest.importorskip("jaxlib._hlo", reason="running protos on XLA's CPU needs jaxlib")

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, "..", "real_programs", "programs")
sys.path.insert(0, os.path.join(HERE, "..", "real_programs"))


def _run(*args: str) -> list[dict]:
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "xla_cpu_runner.py"), *args],
        capture_output=True,
        text=True,
        timeout=1200,
        env=env,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, f"runner died (rc {done.returncode}):\n{done.stderr[-3000:]}"
    return rows


def test_conformance_cases_compute_the_same_on_xla():
    rows = _run("cases")
    ran = [r for r in rows if "skip" not in r]
    errors = [f"{r['id']}: {r['error']}" for r in ran if "error" in r]
    different = [r["id"] for r in ran if r.get("same") is False]
    assert not errors, "XLA cannot run:\n  " + "\n  ".join(errors)
    assert not different, f"outputs differ from XLA's parse of the text: {different}"
    assert len(ran) >= 150, f"only {len(ran)} of {len(rows)} cases ran"


def test_optimized_real_programs_compute_jax_results_on_xla(tmp_path):
    from test_real_programs import ULPS, _load, assert_matches, vector_conditioning

    rows = _run("programs", str(tmp_path))
    ran = [r for r in rows if "skip" not in r]
    errors = [f"{r['name']} ({r['route']}): {r['error']}" for r in ran if "error" in r]
    assert not errors, "XLA cannot run:\n  " + "\n  ".join(errors)
    for row in ran:
        folder = os.path.join(REAL, row["name"])
        expected = _load(os.path.join(folder, "expected.npz"), "out")
        got = _load(row["outputs"], "out")
        args = _load(os.path.join(folder, "inputs.npz"), "arg")
        assert len(got) == len(expected), row
        conditioning = vector_conditioning(row["name"], args)
        for i, (g, want) in enumerate(zip(got, expected, strict=True)):
            eps = float(np.finfo(want.dtype).eps) if want.dtype.kind in "fc" else 0.0
            what = f"{row['name']} ({row['route']}) out{i} on XLA"
            assert_matches(g, want, ULPS * eps * conditioning, what)
    assert len(ran) >= 30, f"only {len(ran)} of {len(rows)} programs ran"
