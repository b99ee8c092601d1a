"""Warm-cache compile time: a second process loading the suite's programs from the disk cache.

Process one compiles every workload's program (JAX's lowering, or the builder module without
jax) into a fresh cache directory; process two starts the cpu client (not timed: that is
process start-up) and then times ``hlort.compile`` of each program, which the persistent
executable cache and the plugin's object cache answer. The first program a process loads also
pays the one-time imports of the compile path. Both run guarded (child_compile.py), so the
first one also tells ``run.py`` which programs compile at all. Run alone (``--quick``,
``--no-jax``) it prints the table.
"""

from __future__ import annotations

import os
import sys
import tempfile

from child_compile import compile_in_child


def measure(programs: list[tuple[str, object]]) -> tuple[dict[str, float], dict[str, str]]:
    """({name: ms to compile in a second process with a warm cache}, {name: compile error})."""
    with tempfile.TemporaryDirectory(prefix="hlort-warm-") as cache:
        # pip byte-compiles installed packages; let the first process write .pyc files too
        drop = ("HLORT_CACHE", "PYTHONDONTWRITEBYTECODE")
        env = {k: v for k, v in os.environ.items() if k not in drop}
        env["HLORT_CACHE_DIR"] = cache
        first = compile_in_child(programs, env)
        errors = {name: row["error"] for name, row in first.items() if "error" in row}
        compiled = [(n, p) for n, p in programs if n not in errors]
        second = compile_in_child(compiled, env)
    misses = [name for name, row in second.items() if not row.get("hit")]
    if misses:
        raise RuntimeError(f"warm-cache run recompiled: {misses}: {second}")
    return {name: row["ms"] for name, row in second.items()}, errors


def main() -> None:
    from sources import source_of
    from workloads import all_workloads

    use_jax = None if "--no-jax" not in sys.argv else False  # --no-jax: builder modules
    programs = []
    for w in all_workloads("--quick" in sys.argv):
        source = source_of(w, use_jax)
        if source.program is not None:
            programs.append((w.name, source.program))
    loads, errors = measure(programs)
    for name, ms in loads.items():
        print(f"{name:<52}{ms:8.2f} ms")
    for name, error in errors.items():
        print(f"{name:<52} does not compile: {error}")


if __name__ == "__main__":
    main()
