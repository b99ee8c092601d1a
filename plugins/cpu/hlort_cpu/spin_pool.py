"""The cpu plugin's native thread pool (spin_pool_ir.py has its protocol and why it spins).

Workers are Python daemon threads that enter the JIT-compiled worker loop through ctypes (the
GIL released) and stay in native code until the pool stops; a dispatch is one ctypes call that
returns when every chunk has run. Only native kernels ``void(ptr table, i64 begin, i64 end)``
run here (thread_pool.py sends Python callables to a Python pool).

Lifetime: the state block comes from ``calloc`` and is never freed, so a worker can never read
freed memory; at exit the pool stops and its threads are joined before the interpreter tears
down (atexit runs after non-daemon threads finished); a forked child gets a fresh pool on first
use (its parent's threads do not exist in it). The pool is made by :func:`native_pool`, which
returns None, with a logged warning, where it cannot be built (not Linux, an llvmlite or JIT
failure): the kernels then run on the Python pool, as before.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading
import time

from hlort.sha256 import sha256
from hlort_cpu import spin_pool_ir
from hlort_cpu.version import PLUGIN_VERSION

SPIN_US = 250  # the longest an idle worker (or a waiting caller) spins before it sleeps
_LOCK = threading.Lock()
_POOL: SpinPool | None = None
_FAILED = False  # a build failed once (already logged): the Python pool runs kernels
_P = ctypes.c_void_p
_RUN = ctypes.CFUNCTYPE(None, _P, _P, _P, _P, _P, ctypes.c_int64)
_WORKER = ctypes.CFUNCTYPE(None, _P)
_TRY_STOP = ctypes.CFUNCTYPE(ctypes.c_int32, _P)


def spin_us() -> int:
    """``HLORT_CPU_SPIN_US`` (microseconds; 0 sleeps at once), else :data:`SPIN_US`."""
    env = os.environ.get("HLORT_CPU_SPIN_US")
    return max(0, int(env)) if env else SPIN_US


def _functions() -> tuple[int, int, int]:
    """Addresses of (worker, run, try_stop), compiled once (quickly: jit.compile_ir_quickly)
    and kept in the compile cache."""
    from hlort_cpu import compile_cache
    from hlort_cpu.codegen.jit import jit_engine

    engine = jit_engine()
    probe = spin_pool_ir.pool_ir("P")
    digest = sha256(probe.encode()).hexdigest()[:16]
    key = compile_cache.cache_key(f"spin-pool-quick-{digest}", PLUGIN_VERSION, engine.key)
    prefix = f"hl{key[:16]}_pool"
    names = [f"{prefix}_worker", f"{prefix}_run", f"{prefix}_try_stop"]
    cached = compile_cache.lookup(key)
    if cached is None:
        obj = engine.compile_ir_quickly(spin_pool_ir.pool_ir(prefix))
        compile_cache.store(key, obj, names)
    else:
        obj = cached[0]
    addresses = engine.load_object(obj, names)
    return tuple(addresses[n] for n in names)


class SpinPool:
    """``workers`` native worker threads; the caller of :meth:`run` is one more."""

    def __init__(self, workers: int):
        worker, run, try_stop = _functions()
        self.workers = workers
        size = spin_pool_ir.STATE_BYTES + 64
        libc = ctypes.CDLL(None)
        libc.calloc.restype, libc.calloc.argtypes = _P, [ctypes.c_size_t, ctypes.c_size_t]
        raw = libc.calloc(1, size)  # never freed: see the module docstring
        if not raw:
            raise MemoryError("hlort cpu pool: calloc of its state failed")
        self.state = -raw % 64 + raw
        ctypes.c_int64.from_address(self.state + spin_pool_ir.SPIN_NS).value = spin_us() * 1000
        self._run = _RUN(run)
        self.run_address = run  # native callers (while drivers) dispatch through it
        self._try_stop = _TRY_STOP(try_stop)
        worker_fn = _WORKER(worker)
        self.threads = [
            threading.Thread(
                target=worker_fn, args=(self.state,), name=f"hlort-cpu-{i}", daemon=True
            )
            for i in range(workers)
        ]
        for t in self.threads:
            t.start()

    def run(self, fn, table, tables, ranges, n: int) -> None:
        """``fn(table or tables[i], *ranges[i])`` for ``i < n`` (2 <= n <= MAX_CHUNKS); returns
        when all have run. ``ranges`` is a ctypes int64 array of 2n bounds, ``tables`` one of n
        pointers or None."""
        self._run(self.state, fn, table, tables, ranges, n)

    def sleepers(self) -> int:
        """How many workers sleep now (not runnable: waiting on the futex)."""
        return ctypes.c_int32.from_address(self.state + spin_pool_ir.SLEEPERS).value

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the workers and join them; False if a dispatch held the pool past ``timeout``."""
        deadline = time.monotonic() + timeout
        while not self._try_stop(self.state):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        for t in self.threads:
            t.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)


def native_pool(workers: int) -> SpinPool | None:
    """The process's pool (made on first use with ``workers`` threads), or None where it
    cannot be built: the failure is logged once as a warning and kernels use the Python pool."""
    global _POOL, _FAILED
    pool = _POOL
    if pool is not None or _FAILED:
        return pool
    with _LOCK:
        if _POOL is None and not _FAILED:
            why = spin_pool_ir.supported()
            if why is None:
                try:
                    _POOL = SpinPool(workers)
                except Exception as e:  # llvmlite/JIT failure, thread start failure
                    why = f"{type(e).__name__}: {e}"
            if why is not None:
                _FAILED = True
                _log().warning("native thread pool unavailable (%s); using Python threads", why)
    return _POOL


def _after_fork_in_child() -> None:
    """The parent's worker threads do not exist here: the next dispatch makes a new pool."""
    global _POOL, _LOCK
    _POOL, _LOCK = None, threading.Lock()


def _at_exit() -> None:
    pool = _POOL
    if pool is not None and not pool.stop():
        _log().warning("native thread pool: a dispatch was still running at exit")


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(_at_exit)


def _log():
    """``hlort.cpu.pool``, a child of hlort's logger (hlort.log); :mod:`logging` is imported
    only for a warning (a first compile otherwise never needs it)."""
    import logging

    return logging.getLogger("hlort.cpu.pool")
