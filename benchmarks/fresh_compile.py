"""First compile in a fresh process: hlort vs jax on the same program, measured the same way.

Each measurement is its own new Python process. It imports NumPy and the library (``import
hlort`` / ``import jax``, not timed: jax's import brings NumPy, so hlort's child imports it too,
else hlort's first compile would pay NumPy's import and jax's would not), then times the first
compile, which pays every lazy one-time cost: for hlort plugin discovery, the client start,
LLVM's initialisation and target machine, the importer, passes and emitter modules; for jax its
backend start and XLA's set-up. hlort compiles JAX's lowering of the workload (the builder
module without jax) with its persistent cache pointed at a new empty directory (a first compile
is a cache miss, and pays the store); jax times ``jax.jit(f).lower(...).compile()``. The
first call on NumPy inputs is timed too ("first execute"), and so is the
whole ``import + compile + first execute`` ("end to end", the interpreter's own start aside).
hlort's summary also has the median of each phase of its compile ("phases": the executable's
timings, the client start before them, and how many modules the compile imported).

Each child reports wall time and its process CPU time (``time.process_time``: all threads); on
a loaded machine the CPU time is the steadier number (wall time includes waiting for a core).
The median over ``repeat`` processes is reported, and the minimum beside it. Python's bytecode
caches are warm, as in any installed package: one untimed process per side runs first with
``PYTHONDONTWRITEBYTECODE`` cleared, so modules imported lazily are not compiled from source
inside the measurement.

    .venv/bin/python benchmarks/fresh_compile.py [--quick] [--no-jax] [--repeat N]
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))

# prints: import wall, import cpu, compile wall, compile cpu, execute wall, execute cpu (ms)
_TIMER = r"""
import time
def _now():
    return time.perf_counter(), time.process_time()
def _ms(a, b):
    return [(b[0] - a[0]) * 1e3, (b[1] - a[1]) * 1e3]
"""

_HLORT_CHILD = (
    _TIMER
    + r"""
t0 = _now()
import numpy as np
import hlort
t1 = _now()
import pickle
with open({path!r}, "rb") as f:
    program, shapes = pickle.load(f)
args = [np.ones(s, d) for s, d in shapes]
import sys
modules = len(sys.modules)
t2 = _now()
exe = hlort.compile(program, "cpu")
t3 = _now()
out = exe(*args)
t4 = _now()
phases = {{k: v * 1e3 for k, v in exe.timings.items()}}
phases["client start"] = _ms(t2, t3)[0] - sum(phases.values())
phases["modules imported"] = len(sys.modules) - modules
print(repr(phases))
print(*_ms(t0, t1), *_ms(t2, t3), *_ms(t3, t4))
"""
)

_JAX_CHILD = (
    _TIMER
    + r"""
t0 = _now()
import numpy as np
import jax
t1 = _now()
import sys
sys.path.insert(0, {here!r})
from workloads import softmax
from sources import jitted
w = softmax(*{dims!r})
specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in w.args]
args = [np.ones(a.shape, a.dtype) for a in w.args]
t2 = _now()
compiled = jitted(w).lower(*specs).compile()
t3 = _now()
out = compiled(*args)
jax.block_until_ready(out)
t4 = _now()
print(*_ms(t0, t1), *_ms(t2, t3), *_ms(t3, t4))
"""
)
_FIELDS = ("import", "compile", "execute")


def _child(code: str, env: dict) -> dict:
    """{"import"|"compile"|"execute": (wall ms, cpu ms)} of one fresh process, and for hlort
    "phases": the executable's timings (ms), the rest of the compile ("client start": plugin
    discovery, the client and LLVM's start) and how many modules the compile imported."""
    with tempfile.TemporaryDirectory(prefix="hlort-fresh-cache-") as cache:
        env = {**env, "HLORT_CACHE_DIR": cache}
        done = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
        )
    if done.returncode != 0:
        raise RuntimeError(f"fresh-process compile failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    values = [float(v) for v in lines[-1].split()]
    out: dict = {name: (values[2 * k], values[2 * k + 1]) for k, name in enumerate(_FIELDS)}
    if len(lines) > 1 and lines[-2].startswith("{"):
        out["phases"] = ast.literal_eval(lines[-2])
    return out


def _summary(runs: list[dict]) -> dict:
    """Medians (and minima) of the compile's wall and CPU ms, and of import+compile+execute."""

    def stats(values: list[float]) -> dict:
        return {"median": statistics.median(values), "min": min(values)}

    end_to_end = [sum(r[f][0] for f in _FIELDS) for r in runs]
    phases = [r["phases"] for r in runs if "phases" in r]
    summary = {
        "compile_ms": stats([r["compile"][0] for r in runs]),
        "compile_cpu_ms": stats([r["compile"][1] for r in runs]),
        "execute_ms": stats([r["execute"][0] for r in runs]),
        "end_to_end_ms": stats(end_to_end),
    }
    if phases:  # median of each phase over the processes
        summary["phases"] = {k: statistics.median(p[k] for p in phases) for k in phases[0]}
    return summary


def measure(quick: bool = False, use_jax: bool | None = None, repeat: int = 5) -> dict:
    """{"program", "source", "hlort_ms", "jax_ms" (None without jax), "hlort", "jax"}: the
    ``*_ms`` are the median first-compile wall times; "hlort"/"jax" hold every summary."""
    from sources import source_of
    from workloads import jax, softmax

    dims = (64, 128) if quick else (256, 1024)
    repeat = 1 if quick else repeat
    w = softmax(*dims)
    use_jax = jax is not None if use_jax is None else use_jax
    source = source_of(w, use_jax)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("HLORT_FALLBACK", "allow")
    shapes = [(a.shape, a.dtype) for a in w.args]
    with tempfile.TemporaryDirectory(prefix="hlort-fresh-") as tmp:
        path = os.path.join(tmp, "program.pickle")
        with open(path, "wb") as f:
            pickle.dump((source.program, shapes), f)
        code = _HLORT_CHILD.format(path=path)
        _child(code, env)  # untimed: writes the bytecode caches
        jax_code = _JAX_CHILD.format(here=_HERE, dims=dims) if use_jax else None
        if jax_code:
            _child(jax_code, env)
        hlort_runs, jax_runs = [], []
        for _ in range(repeat):  # alternating: a load change hits both sides alike
            hlort_runs.append(_child(code, env))
            if jax_code:
                jax_runs.append(_child(jax_code, env))
    hlort = _summary(hlort_runs)
    jax_summary = _summary(jax_runs) if jax_runs else None
    return {
        "program": w.name,
        "source": source.label,
        "hlort_ms": hlort["compile_ms"]["median"],
        "jax_ms": jax_summary["compile_ms"]["median"] if jax_summary else None,
        "hlort": hlort,
        "jax": jax_summary,
    }


if __name__ == "__main__":
    sys.path.insert(0, _HERE)
    no_jax = "--no-jax" in sys.argv  # the builder module, hlort only
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 5
    result = measure("--quick" in sys.argv, False if no_jax else None, repeat)
    print(json.dumps(result, indent=2))
