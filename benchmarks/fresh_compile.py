"""First compile in a fresh process: hlort vs jax on the same program, imports excluded.

Each measurement is its own new Python process: it imports (not timed), then times the first
compile, which pays every lazy one-time cost (client start, LLVM initialisation and target
machine creation for hlort; backend start and XLA's set-up for jax). hlort compiles JAX's
lowering of the workload (the builder module without jax), with the persistent cache off; jax
times ``jax.jit(f).lower(...).compile()``. The median of ``repeat`` processes is reported.
Python's bytecode caches are warm, as in any installed package: one untimed process per side
runs first with ``PYTHONDONTWRITEBYTECODE`` cleared, so modules the first compile imports lazily
are not compiled from source inside the measurement.

    .venv/bin/python benchmarks/fresh_compile.py [--quick] [--no-jax]
"""

from __future__ import annotations

import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))

_HLORT_CHILD = r"""
import pickle, time
import hlort
with open({path!r}, "rb") as f:
    program = pickle.load(f)
start = time.perf_counter()
hlort.compile(program, "cpu")
print((time.perf_counter() - start) * 1e3)
"""

_JAX_CHILD = r"""
import sys, time
sys.path.insert(0, {here!r})
import jax
from workloads import softmax
from sources import jitted
w = softmax(*{dims!r})
specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in w.args]
start = time.perf_counter()
jitted(w).lower(*specs).compile()
print((time.perf_counter() - start) * 1e3)
"""


def _child_ms(code: str, env: dict) -> float:
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"fresh-process compile failed: {done.stderr[-2000:]}")
    return float(done.stdout.strip().splitlines()[-1])


def measure(quick: bool = False, use_jax: bool | None = None, repeat: int = 3) -> dict:
    """{"program", "source", "hlort_ms", "jax_ms" (None without jax)}: medians over processes."""
    from sources import source_of
    from workloads import jax, softmax

    dims = (64, 128) if quick else (256, 1024)
    repeat = 1 if quick else repeat
    w = softmax(*dims)
    use_jax = jax is not None if use_jax is None else use_jax
    source = source_of(w, use_jax)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("HLORT_CACHE_DIR", "PYTHONDONTWRITEBYTECODE")
    }
    env["HLORT_CACHE"] = "0"
    env.setdefault("HLORT_FALLBACK", "allow")
    with tempfile.TemporaryDirectory(prefix="hlort-fresh-") as tmp:
        path = os.path.join(tmp, "program.pickle")
        with open(path, "wb") as f:
            pickle.dump(source.program, f)
        code = _HLORT_CHILD.format(path=path)
        _child_ms(code, env)  # untimed: writes the bytecode caches
        hlort_ms = [_child_ms(code, env) for _ in range(repeat)]
    jax_ms = None
    if use_jax:
        code = _JAX_CHILD.format(here=_HERE, dims=dims)
        _child_ms(code, env)
        jax_ms = statistics.median(_child_ms(code, env) for _ in range(repeat))
    return {
        "program": w.name,
        "source": source.label,
        "hlort_ms": statistics.median(hlort_ms),
        "jax_ms": jax_ms,
    }


if __name__ == "__main__":
    sys.path.insert(0, _HERE)
    no_jax = "--no-jax" in sys.argv  # the builder module, hlort only
    print(json.dumps(measure("--quick" in sys.argv, False if no_jax else None), indent=2))
