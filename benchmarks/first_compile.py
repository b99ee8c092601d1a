"""First compile in a fresh process: hlort-cpu vs jax.jit (when installed), one line.

Each sample is a new Python process that imports the framework (not timed: ``import hlort``
and ``import jax`` are separate costs), then times its first compile of the same small program,
``tanh(x * 2 + 1)`` on f32[1024]: backend start-up (plugin discovery, LLVM initialisation and
target machine creation), the passes, code generation and loading. Caches are cold (hlort's
persistent cache points at an empty directory; JAX keeps none by default). Python's bytecode
caches are warm, as in any installed package: one untimed process runs first, with
``PYTHONDONTWRITEBYTECODE`` cleared, so modules imported lazily by the first compile are not
compiled from source inside the measurement. The line shows the median of ``--samples``
processes per side; ``--json`` prints the same as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HLO = """HloModule first_compile
ENTRY main {
  x = f32[1024] parameter(0)
  two = f32[] constant(2)
  one = f32[] constant(1)
  b2 = f32[1024] broadcast(two), dimensions={}
  b1 = f32[1024] broadcast(one), dimensions={}
  m = f32[1024] multiply(x, b2)
  a = f32[1024] add(m, b1)
  ROOT t = f32[1024] tanh(a)
}"""

_HLORT = f"""
import time, numpy as np
import hlort
text = {HLO!r}
start = time.perf_counter()
exe = hlort.compile(text, "cpu")
elapsed = time.perf_counter() - start
x = np.linspace(-3, 3, 1024, dtype=np.float32)
assert np.allclose(exe(x), np.tanh(x * 2 + 1), atol=1e-6)
print(elapsed)
"""

_JAX = """
import time, numpy as np
import jax, jax.numpy as jnp
x = np.linspace(-3, 3, 1024, dtype=np.float32)
start = time.perf_counter()
compiled = jax.jit(lambda v: jnp.tanh(v * 2 + 1)).lower(x).compile()
elapsed = time.perf_counter() - start
assert np.allclose(compiled(x), np.tanh(x * 2 + 1), atol=1e-6)
print(elapsed)
"""


def _sample(script: str, env: dict[str, str]) -> float:
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed")
    return float(proc.stdout.strip().splitlines()[-1])


def measure(samples: int) -> dict[str, float | int | None]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("HLORT_PLATFORMS", "PYTHONDONTWRITEBYTECODE")}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="hlort-first-compile-") as cache:
        _sample(_HLORT, {**env, "HLORT_CACHE_DIR": cache})  # writes the bytecode caches
    hlort_times = []
    for _ in range(samples):
        with tempfile.TemporaryDirectory(prefix="hlort-first-compile-") as cache:
            hlort_times.append(_sample(_HLORT, {**env, "HLORT_CACHE_DIR": cache}))
    jax_times = []
    try:
        import importlib.util

        if importlib.util.find_spec("jax") is not None:
            _sample(_JAX, {**env, "JAX_PLATFORMS": "cpu"})
            jax_times = [_sample(_JAX, {**env, "JAX_PLATFORMS": "cpu"}) for _ in range(samples)]
    except RuntimeError:
        jax_times = []
    hlort_ms = statistics.median(hlort_times) * 1e3
    jax_ms = statistics.median(jax_times) * 1e3 if jax_times else None
    return {"samples": samples, "hlort_cpu_ms": round(hlort_ms, 1),
            "hlort_cpu_min_ms": round(min(hlort_times) * 1e3, 1),
            "jax_ms": round(jax_ms, 1) if jax_ms is not None else None,
            "ratio": round(hlort_ms / jax_ms, 2) if jax_ms else None}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5, help="fresh processes per side")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of text")
    args = parser.parse_args(argv)
    result = measure(max(1, args.samples))
    if args.json:
        print(json.dumps(result))
        return 0
    line = (f"first compile in a fresh process (median of {result['samples']}): hlort-cpu "
            f"{result['hlort_cpu_ms']:.1f} ms (min {result['hlort_cpu_min_ms']:.1f})")
    if result["jax_ms"] is not None:
        line += f", jax.jit {result['jax_ms']:.1f} ms, ratio {result['ratio']:.2f}x"
    else:
        line += ", jax not installed"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
