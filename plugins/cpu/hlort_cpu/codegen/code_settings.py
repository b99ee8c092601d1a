"""The tuning constants that decide what code is emitted, or how a native loop is planned, so
the compile cache's key can name the ones changed at run time.

The cache keys an entry on the module's fingerprint and a digest of the emitters' source, which
covers each constant's value as written. A constant changed in a running process (a test's
monkeypatch, an experiment) is in no source file: without this a second compile of the same
module loads the first one's object code, and a native while loop (planned again on a cache
hit) can be planned for other settings than its loaded driver was emitted for, and crash.

Each module declares its settings once, at import, with their values then; :func:`changed`
names those whose value differs now. In a process that changed none it is empty, so keys are
the same in every process (the disk cache keeps hitting) and cost one comparison per setting.
The library kernels compiled once per process (small and narrow dots, gemm parts, the runtime
library) keep them in :func:`memo`, keyed by the same string, so a changed setting builds a
new kernel there too instead of returning the one built before.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

Result = TypeVar("Result")

_DECLARED: list[tuple[object, str, object]] = []  # (module, name, value at import)


def declare(module_name: str, *names: str) -> None:
    """Record ``names`` of the module being imported as settings, with their values now."""
    module = sys.modules[module_name]
    _DECLARED.extend((module, name, getattr(module, name)) for name in names)


def changed() -> str:
    """``module.NAME=value`` of every declared setting that differs from its value at import,
    joined by ``|``; empty when none does."""
    return "|".join(
        f"{module.__name__}.{name}={value!r}"
        for module, name, default in _DECLARED
        if (value := getattr(module, name)) != default
    )


def memo(build: Callable[..., Result]) -> Callable[..., Result]:
    """``functools.cache`` for a kernel builder, keyed also by :func:`changed`: one kernel per
    arguments and settings. Built once under a lock (two threads asking for a kernel no one has
    built compile it once); ``cache_clear`` forgets every kernel."""
    built: dict[tuple, Result] = {}
    lock = threading.RLock()

    @functools.wraps(build)
    def kernel(*args):
        key = (changed(), *args)
        try:
            return built[key]
        except KeyError:
            pass
        with lock:
            if key not in built:
                built[key] = build(*args)
            return built[key]

    kernel.cache_clear = built.clear
    return kernel
