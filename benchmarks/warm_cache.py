"""Warm-cache compile time: a second process loading the suite's modules from the disk cache.

Process one compiles every workload into a fresh cache directory; process two starts the cpu
client (not timed: that is process start-up) and then times ``hlort.compile`` of each module,
which the persistent executable cache and the plugin's object cache answer. Run alone it prints
the table; ``run.py`` calls ``measure`` and reports the median and worst load.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

_CHILD = """
import json, os, sys, time
sys.path.insert(0, {here!r})
import hlort
from workloads import all_workloads
hlort.backend("cpu").devices()  # start the client outside the timing
out = {{}}
for w in all_workloads({quick!r}):
    start = time.perf_counter()
    exe = hlort.compile(w.module, "cpu")
    out[w.name] = (time.perf_counter() - start) * 1e3
    out[w.name + " (hit)"] = "cache_load" in exe.timings
print(json.dumps(out))
"""


def measure(quick: bool = False) -> dict[str, float]:
    """{workload: ms to compile in a second process with a warm cache}."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = _CHILD.format(here=here, quick=quick)
    with tempfile.TemporaryDirectory(prefix="hlort-warm-") as cache:
        # pip byte-compiles installed packages; let the first process write .pyc files too
        drop = ("HLORT_CACHE", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env["HLORT_CACHE_DIR"] = cache
        for _ in range(2):  # the first run fills the cache, the second one is measured
            done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                  text=True, check=True)  # fmt: skip
    result = json.loads(done.stdout)
    misses = [k for k, v in result.items() if k.endswith(" (hit)") and not v]
    if misses:
        raise RuntimeError(f"warm-cache run recompiled: {misses}")
    return {k: v for k, v in result.items() if not k.endswith(" (hit)")}


if __name__ == "__main__":
    for name, ms in measure("--quick" in sys.argv).items():
        print(f"{name:<34}{ms:8.2f} ms")
