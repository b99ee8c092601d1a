"""Warm-cache compile time: a second process loading the suite's modules from the disk cache.

Process one compiles every workload's module into a fresh cache directory; process two starts the
cpu client (not timed: that is process start-up) and then times ``hlort.compile`` of each module,
which the persistent executable cache and the plugin's object cache answer. The first module a
process loads also pays the one-time imports of the compile path. Run alone it prints
the table; ``run.py`` calls ``measure`` and reports the median and worst load.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import tempfile

_CHILD = """
import json, pickle, sys, time
import hlort
hlort.backend("cpu").devices()  # start the client outside the timing
with open({modules!r}, "rb") as f:
    modules = pickle.load(f)
out = {{}}
for name, module in modules:
    start = time.perf_counter()
    exe = hlort.compile(module, "cpu")
    out[name] = (time.perf_counter() - start) * 1e3
    out[name + " (hit)"] = "cache_load" in exe.timings
print(json.dumps(out))
"""


def measure(quick: bool = False) -> dict[str, float]:
    """{workload: ms to compile in a second process with a warm cache}, in suite order.

    The children get the suite's modules pickled, not the workloads: building ~1 GB of inputs
    in the measuring process would time the VM re-faulting the memory it just freed."""
    from workloads import all_workloads

    with tempfile.TemporaryDirectory(prefix="hlort-warm-") as cache:
        modules = os.path.join(cache, "modules.pickle")
        with open(modules, "wb") as f:
            pickle.dump([(w.name, w.module) for w in all_workloads(quick)], f)
        code = _CHILD.format(modules=modules)
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
