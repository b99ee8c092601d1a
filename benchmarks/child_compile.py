"""Compile programs in a child process, guarded: a memory cap, a time limit per program, and a
restart after a crash, so one program that makes the compiler grow without bound, hang or abort
becomes that row's error instead of taking the benchmark (or the machine) down.

The child reads ``[(name, program)]`` from a pickle, compiles each with ``hlort.compile`` on cpu
and prints one JSON line per program: ``{"name", "ms", "hit", "fallbacks", "error"}``. The
persistent cache is whatever the environment says (warm_cache.py points it at a fresh folder).
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile

MEMORY_CAP_BYTES = 1280 << 20  # address space: the suite compiles under 1 GB (hlort alone: 0.6)
SECONDS_PER_PROGRAM = 180

_CHILD = r"""
import json, pickle, resource, signal, sys, time
import hlort
hlort.backend("cpu").devices()  # start the client outside the timing
resource.setrlimit(resource.RLIMIT_AS, ({cap}, {cap}))

def _alarm(signum, frame):
    raise TimeoutError("compile took over {seconds} s")

signal.signal(signal.SIGALRM, _alarm)
with open({path!r}, "rb") as f:
    programs = pickle.load(f)
for name, program in programs:
    print(json.dumps({{"start": name}}), flush=True)
    signal.alarm({seconds})
    row = {{"name": name}}
    start = time.perf_counter()
    try:
        exe = hlort.compile(program, "cpu")
        row["ms"] = (time.perf_counter() - start) * 1e3
        row["hit"] = "cache_load" in exe.timings
        row["fallbacks"] = exe.raw.stats().get("fallback_count")
    except (Exception, MemoryError) as err:  # each program's failure is its own row
        text = str(err) if isinstance(err, hlort.HlortError) else f"{{type(err).__name__}}: {{err}}"
        row["error"] = text[:300]
    finally:
        signal.alarm(0)
    exe = None
    print(json.dumps(row), flush=True)
"""


def compile_in_child(
    programs: list[tuple[str, object]],
    env: dict | None = None,
    cap: int = MEMORY_CAP_BYTES,
    seconds: int = SECONDS_PER_PROGRAM,
) -> dict[str, dict]:
    """{name: row} for every program, in order; a program the child died on gets an
    ``error`` naming how it died, and a fresh child carries on with the rest."""
    env = dict(os.environ if env is None else env)
    env["HLORT_FALLBACK"] = env.get("HLORT_FALLBACK", "allow")
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="hlort-child-") as tmp:
        path = os.path.join(tmp, "programs.pickle")
        while len(results) < len(programs):
            todo = [(n, p) for n, p in programs if n not in results]
            with open(path, "wb") as f:
                pickle.dump(todo, f)
            code = _CHILD.format(path=path, cap=cap, seconds=seconds)
            started = _run(code, env, results, timeout=seconds * len(todo) + 60)
            if started is None:
                continue  # the child finished what it was given
            results[started[0]] = {"name": started[0], "error": started[1]}
    return {name: results[name] for name, _ in programs}


def _run(code: str, env: dict, results: dict, timeout: float):
    """Run one child, filling ``results``; (name, how it died) if it died inside a compile."""
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    current = None
    for line in out.splitlines():
        if not line.startswith("{"):
            continue  # anything else a compile printed
        row = json.loads(line)
        if "start" in row:
            current = row["start"]
        else:
            results[row["name"]] = row
            current = None
    if proc.returncode == 0 and current is None:
        return None
    if current is None:  # died outside any compile: start-up is broken, report it plainly
        raise RuntimeError(f"compile child failed (exit {proc.returncode}): {err[-2000:]}")
    last = err.strip().splitlines()[-1:] or [""]
    return current, f"compile process died (exit {proc.returncode}): {last[0][:300]}"
