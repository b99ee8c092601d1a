"""JAX shows hlort's optimized program: ``jit(f).lower(x).compile().as_text()`` and
``runtime_executable().hlo_modules()`` read it through PJRT_Executable_OptimizedProgram
(hlort-jax), on every hlort platform; JAX's own ``test_dce_sink_prevents_xla_dce`` passes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("jax", reason="needs jax[cpu]==0.10.2")
pytest.importorskip("hlort_jax", reason="needs the hlort-jax bridge (plugins/jax)")

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SUITE = os.path.join(ROOT, "..", "shared", "jax-tests", "tests", "lax_test.py")
PLATFORMS = ("hlort_cpu", "hlort_interpreter", "hlort_tpusim")

SCRIPT = """
import sys
import jax, jax.numpy as jnp, numpy as np
device = jax.devices(sys.argv[1])[0]
f = jax.jit(lambda x, y: (jnp.sin(x) * 2 + y, jnp.sum(x)))
x = jax.device_put(jnp.arange(6.0, dtype=jnp.float32).reshape(2, 3), device)
compiled = f.lower(x, x).compile()
text = compiled.as_text()
modules = compiled.runtime_executable().hlo_modules()
print("MODULES", len(modules))
print(text)
a, b = compiled(x, x)
np.testing.assert_allclose(np.asarray(a), np.sin(np.asarray(x)) * 2 + np.asarray(x), rtol=1e-6)
assert float(b) == 15.0
print("RAN")
"""


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compiled_as_text_is_hlorts_optimized_program(platform):
    env = dict(os.environ, JAX_PLATFORMS=f"{platform},cpu")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, platform],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "MODULES 1" in out and "RAN" in out
    assert "HloModule jit__lambda" in out and "ENTRY" in out
    assert (
        "entry_computation_layout={(f32[2,3]{1,0}, f32[2,3]{1,0})->(f32[2,3]{1,0}, f32[])}" in out
    )
    # hlort's own passes made it: its fusion computations and its schedule
    assert "fusion(" in out and "is_scheduled=true" in out


@pytest.mark.skipif(not os.path.exists(SUITE), reason="JAX's tests are not in ../shared/jax-tests")
def test_jaxs_dce_sink_test_passes_on_hlort_cpu():
    pytest.importorskip("absl", reason="JAX's lax_test.py needs absl-py (pip install -e .[bench])")
    tools = os.path.join(ROOT, "plugins", "jax", "tools")
    env = dict(
        os.environ,
        JAX_PLATFORMS="hlort_cpu,cpu",
        HLORT_JAX_TEST_DUT="cpu",
        JAX_NUM_GENERATED_CASES="1",
        PYTHONPATH=os.pathsep.join(filter(None, (tools, os.environ.get("PYTHONPATH")))),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "jax_test_dut",
            SUITE,
            "-k",
            "test_dce_sink_prevents_xla_dce",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:]
