"""Splitting a kernel's outer range across cores, and running the chunks.

Native kernels (ctypes functions ``void(ptr table, i64 begin, i64 end)``) run on the native
spinning pool (spin_pool.py): one ctypes call publishes the chunks, runs the first on the
calling thread and returns when all have run, with no Python on the workers; a Python
``ThreadPoolExecutor`` hand-off cost ~150 us per call on a 2-core VM, more than many kernels.
Python callables (an FFT's NumPy parts) and kernels on a machine where the native pool cannot be
built (logged) run on the Python pool: ctypes and NumPy drop the GIL, so those run in parallel
too. Small kernels run inline (no hand-off), and so does every chunk of a dispatch while other
work's threads crowd the cores (:func:`crowded`), unless its chunks are long (``Ranges.long``).
``HLORT_CPU_THREADS`` sets the thread count; with 1 nothing is split and no pool is made.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import os
import threading
import time
from typing import TYPE_CHECKING

from hlort_cpu.codegen import code_settings
from hlort_cpu.spin_pool import native_pool
from hlort_cpu.spin_pool_ir import MAX_CHUNKS

if TYPE_CHECKING:  # concurrent.futures is imported when the Python pool is first used
    from concurrent.futures import ThreadPoolExecutor

PARALLEL_MIN_ELEMENTS = 1 << 16
# A chunk this long gains nothing by yielding its thread to other runnable threads: the kernel
# time-slices them with ours anyway, and a worker preempted in the middle of it costs the caller
# a scheduler slice (~1-3 ms), not the chunk's length. Matmuls on the loaded 2-vCPU VM (1
# spinning neighbour + ~3 other runnable threads, calls alternating in one process): parts of
# ~0.7 ms ran 7% faster inline, ~2.5 ms the same, ~6 ms 30% faster on the pool, ~48 ms 32%.
LONG_CHUNK_MS = 3
# A kernel that reads at most scalars (a fill of a constant, an iota) only writes memory:
# measured on a quiet 2-vCPU VM, f32 fills of 2^17 elements took 13.8 us on two threads and
# 15.4 on one (p90 25 vs 16: the worker's hand-off), 2^18 elements 18 vs 26 us, 2^20 65 vs 155.
FILL_MIN_ELEMENTS = 1 << 18
code_settings.declare(__name__, "PARALLEL_MIN_ELEMENTS", "FILL_MIN_ELEMENTS")
_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()
_CFUNC = ctypes._CFuncPtr
_I64 = ctypes.c_int64


def worker_count() -> int:
    env = os.environ.get("HLORT_CPU_THREADS")
    if env:
        return max(1, int(env))
    return _cores()


def cores_available() -> int:
    """The cores this process may run on (whatever HLORT_CPU_THREADS says)."""
    return _cores()


@functools.cache
def _cores() -> int:
    """The cores this process may run on, asked once (a syscall; every big dot asks for the
    count): the native pool's threads are fixed when it is made anyway."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


@functools.cache
def _machine_cpus() -> int:
    """The CPUs the kernel schedules on (``/proc/loadavg`` counts runnable threads on all of
    them): a process pinned to 2 of a host's 64 CPUs must not read 10 runnable threads
    elsewhere as its own cores being crowded."""
    return os.cpu_count() or 1


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        with _LOCK:
            if _POOL is None:
                from concurrent.futures import ThreadPoolExecutor

                _POOL = ThreadPoolExecutor(max(1, worker_count() - 1), "hlort-cpu-py")
    return _POOL


def _after_fork_in_child() -> None:
    # the executor's threads are gone in a child; it would queue work no thread takes
    global _POOL, _LOCK
    _POOL, _LOCK = None, threading.Lock()
    _cores.cache_clear()  # the child may be pinned to other cores


os.register_at_fork(after_in_child=_after_fork_in_child)


class Ranges(list):
    """A list of (begin, end) that keeps its native form (int64 pairs) for the native pool.
    ``long``: its maker estimated every chunk at LONG_CHUNK_MS or more of one core's time
    (a big dot's gemm parts, dot_split.py), so no count of runnable threads demotes its
    dispatch (:func:`threads_free`)."""

    native = None
    long = False

    def bounds(self):
        if self.native is None:
            self.native = (_I64 * (2 * len(self)))(*itertools.chain.from_iterable(self))
        return self.native


def chunks(
    extent: int, elements_per_iteration: int, min_elements: int = PARALLEL_MIN_ELEMENTS
) -> Ranges:
    """How to split [0, extent): one chunk unless the work is big enough for several cores
    (``min_elements``: FILL_MIN_ELEMENTS for kernels that read at most scalars)."""
    workers = worker_count()
    if workers == 1 or extent < 2 or extent * elements_per_iteration < min_elements:
        return Ranges([(0, extent)])
    return split(extent, min(workers, extent))


def split(extent: int, n: int) -> Ranges:
    """[0, extent) in ``n`` (or fewer) even parts."""
    step = -(-extent // n)
    return Ranges((s, min(s + step, extent)) for s in range(0, extent, step))


class _RunQueue:
    """How many threads a dispatch may use while threads of other work wait for this machine's
    cores (see :func:`threads_free`): the kernel's count of runnable threads
    (``/proc/loadavg``'s fourth field, one ``pread`` of ~0.5 us), read at most once per
    CHECK_NS."""

    CHECK_NS = 1_000_000

    def __init__(self) -> None:
        self.fd: int | None = None
        self.checked = -self.CHECK_NS
        self.others = 0  # runnable threads of other work beyond the slack, at the last read
        self.enabled = os.environ.get("HLORT_CPU_YIELD_TO_LOAD", "1") != "0"
        if self.enabled:
            try:
                self.fd = os.open("/proc/loadavg", os.O_RDONLY)
            except OSError:  # not Linux: never crowded
                self.enabled = False

    def threads(self, pool) -> int:
        """This thread and the pool's workers, less one per other runnable thread beyond the
        cores the pool leaves free (and a slack of an eighth of them); at least 1."""
        now = time.monotonic_ns()
        if now - self.checked >= self.CHECK_NS:
            self.checked = now
            try:
                running = int(os.pread(self.fd, 128, 0).split()[3].split(b"/")[0])
            except (OSError, IndexError, ValueError):
                self.enabled, self.others = False, 0
                return 1 + pool.workers
            ours = 1 + pool.workers - pool.sleepers()  # this thread and the awake workers
            cores = _machine_cpus()  # the count is the whole kernel's, not this process's cpuset
            slack = max(0, cores - 1 - pool.workers) + cores // 8
            self.others = max(0, running - ours - slack)
        return max(1, 1 + pool.workers - self.others)

    def check(self, pool) -> bool:
        """Crowded: fewer than two threads free, so a dispatch runs on the calling thread."""
        return self.threads(pool) < 2


_RUN_QUEUE: _RunQueue | None = None


def _queue() -> _RunQueue:
    global _RUN_QUEUE
    queue = _RUN_QUEUE
    if queue is None:
        queue = _RUN_QUEUE = _RunQueue()
    return queue


def threads_free(pool, ranges=None) -> int:
    """How many threads (this one and the pool's workers) a dispatch may use now: all of them,
    less one per runnable thread of other work beyond the cores this pool leaves free. On an
    oversubscribed machine a worker that takes a chunk may be preempted in the middle of it,
    and the caller then waits a scheduler slice (milliseconds) for a chunk of ~100 us:
    measured with ~5 runnable threads on 2 vCPUs, the AdamW step's median went from 1.15 ms
    on one thread to 1.68 ms on two. Proportional, so a few other threads on a many-core host
    take a few of its threads, not all but one. ``HLORT_CPU_YIELD_TO_LOAD=0``: always all;
    so do ``ranges`` whose chunks are long (:class:`Ranges`, LONG_CHUNK_MS): a 48 ms gemm part
    run inline behind a neighbour that spun for a millisecond cost the whole 48."""
    queue = _queue()
    if not queue.enabled:
        DISPATCHES[_POOLED] += 1
        return 1 + pool.workers
    free = queue.threads(pool)
    if getattr(ranges, "long", False):
        DISPATCHES[_POOLED if free > pool.workers else _LONG] += 1
        return 1 + pool.workers
    DISPATCHES[_POOLED if free > pool.workers else _CROWDED] += 1
    return free


def crowded(pool, ranges=None) -> bool:
    """Whether to run a dispatch's chunks on the calling thread, in order, instead of on the
    pool: fewer than two threads are free (:func:`threads_free`; never for long ``ranges``).
    The chunks and their order stay the same, so the bits do."""
    return threads_free(pool, ranges) < 2


# What :func:`threads_free` decided since the process started (once per dispatch of several
# native chunks, and per call of a native while loop, through :func:`crowded`): the whole pool,
# fewer threads (crowded: on 2 CPUs, inline), or the whole pool only because the chunks are long
# (the run queue would have taken threads). A list, so counting costs one index;
# :func:`dispatch_counts` names them.
_POOLED, _CROWDED, _LONG = 0, 1, 2
DISPATCHES = [0, 0, 0]


def dispatch_counts() -> dict[str, int]:
    """{"pooled", "crowded", "long"}: how the pool's dispatches went (see DISPATCHES;
    benchmarks/crowded_matmul.py logs it)."""
    return dict(zip(("pooled", "crowded", "long"), DISPATCHES, strict=True))


def merged(ranges, n: int) -> Ranges | None:
    """Contiguous ``ranges`` in ``n`` runs of whole consecutive chunks (None if they are not
    contiguous): a dispatch with fewer threads free than chunks gives each thread one run, so
    no more than ``n`` threads take part. Every element is in the same one range as before but
    a kernel runs it from a longer range: kernels compute each element of their range alike
    (a split reduce's partials are per iteration, not per chunk), so the bits stay."""
    if any(a[1] != b[0] for a, b in zip(ranges, ranges[1:], strict=False)):
        return None
    count = len(ranges)
    cuts = [g * count // n for g in range(n + 1)]
    return Ranges((ranges[cuts[g]][0], ranges[cuts[g + 1] - 1][1]) for g in range(n))


def run_inline(fn, tables: list, ranges) -> None:
    """Every chunk on the calling thread, in order."""
    for table, (begin, end) in zip(tables, ranges, strict=True):
        fn(table, begin, end)


def run_chunks(fn, pointers, ranges: list[tuple[int, int]]) -> None:
    """Run ``fn(pointers, begin, end)`` for every range; the caller's thread takes the first.
    ``pointers`` may be a list with one pointer table per range (per-chunk scratch). Returns
    (or raises) only once every chunk has finished: the memory they write may be reused as soon
    as this returns (a program's arena goes back for the next call)."""
    n = len(ranges)
    if n == 1:
        fn(pointers[0] if isinstance(pointers, list) else pointers, *ranges[0])
        return
    if isinstance(fn, _CFUNC) and n <= MAX_CHUNKS:
        pool = native_pool(worker_count() - 1)
        free = threads_free(pool, ranges) if pool is not None else 0
        if pool is not None and free < 2:
            run_inline(fn, pointers if isinstance(pointers, list) else [pointers] * n, ranges)
            return
        if pool is not None and free < n and not isinstance(pointers, list):
            runs = merged(ranges, free)
            if runs is not None:
                ranges, n = runs, free
        if pool is not None:
            bounds = ranges.bounds() if isinstance(ranges, Ranges) else Ranges(ranges).bounds()
            if isinstance(pointers, list):
                tables = (ctypes.c_void_p * n)(*[ctypes.addressof(t) for t in pointers])
                pool.run(fn, None, tables, bounds, n)
            else:
                pool.run(fn, pointers, None, bounds, n)
            return
    tables = pointers if isinstance(pointers, list) else [pointers] * n
    futures = [
        _pool().submit(fn, t, b, e) for t, (b, e) in zip(tables[1:], ranges[1:], strict=True)
    ]
    try:
        fn(tables[0], *ranges[0])
    finally:
        from concurrent.futures import wait

        wait(futures)
    for f in futures:
        f.result()
