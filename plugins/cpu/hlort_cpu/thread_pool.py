"""Splitting a kernel's outer range across cores. ctypes drops the GIL during a kernel call, so
plain Python threads run kernel chunks in parallel; small kernels run inline (no hand-off)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

PARALLEL_MIN_ELEMENTS = 1 << 16
_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()


def worker_count() -> int:
    env = os.environ.get("HLORT_CPU_THREADS")
    if env:
        return max(1, int(env))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        with _LOCK:
            if _POOL is None:
                _POOL = ThreadPoolExecutor(max(1, worker_count() - 1), "hlort-cpu")
    return _POOL


def chunks(extent: int, elements_per_iteration: int) -> list[tuple[int, int]]:
    """How to split [0, extent): one chunk unless the work is big enough for several cores."""
    workers = worker_count()
    if workers == 1 or extent < 2 or extent * elements_per_iteration < PARALLEL_MIN_ELEMENTS:
        return [(0, extent)]
    n = min(workers, extent)
    step = -(-extent // n)
    return [(s, min(s + step, extent)) for s in range(0, extent, step)]


def run_chunks(fn, pointers, ranges: list[tuple[int, int]]) -> None:
    """Run ``fn(pointers, begin, end)`` for every range; the caller's thread takes the first.
    ``pointers`` may be a list with one pointer table per range (per-chunk scratch)."""
    tables = pointers if isinstance(pointers, list) else [pointers] * len(ranges)
    if len(ranges) == 1:
        fn(tables[0], *ranges[0])
        return
    futures = [
        _pool().submit(fn, t, b, e) for t, (b, e) in zip(tables[1:], ranges[1:], strict=True)
    ]
    try:
        fn(tables[0], *ranges[0])
    finally:
        # every chunk has finished before anything is raised: the memory they write may be
        # reused as soon as this returns (a program's arena goes back for the next call)
        wait(futures)
    for f in futures:
        f.result()
