"""Make the garbage collector run a buffer's finalizer at the worst moment, and catch a hang.

A buffer dropped in a reference cycle is freed when the garbage collector next runs, and that
can be inside any allocation of any thread, including one a plugin makes while it holds its
allocator's lock. A finalizer that then takes the same lock deadlocks the thread on itself.
These helpers make that moment happen on purpose instead of by luck, for a plugin's own tests:

* :class:`CollectingLock` wraps a plugin's lock: every acquisition runs a collection while the
  lock is held (``device.arena._lock = CollectingLock(device.arena._lock)``);
* :func:`drop_in_cycle` leaves an object reachable only from a reference cycle;
* :func:`manual_gc` stops automatic collections, so the cycle survives until the lock runs one;
* :func:`finishes_within` runs the check in a thread and turns a deadlock into a test failure
  (the suite goes on; the stuck daemon thread is abandoned);
* :func:`in_threads` runs one piece of work in several threads at once (a stress test).
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Callable, Iterator
from typing import Any


class CollectingLock:
    """``lock`` (a ``Lock`` or ``RLock``) that runs ``gc.collect()`` each time it is acquired,
    while it is held; ``collected`` counts the unreachable objects those collections found."""

    def __init__(self, lock: Any):
        self.lock = lock
        self.collected = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self.lock.acquire(blocking, timeout)
        if got:
            self.collected += gc.collect()  # 0 when a collection is already running
        return got

    def release(self) -> None:
        self.lock.release()

    def __enter__(self) -> CollectingLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


def drop_in_cycle(obj: object) -> None:
    """Keep ``obj`` alive only through a reference cycle: the next collection frees it (pass a
    fresh object, holding no other reference to it)."""
    cycle: list = [obj]
    cycle.append(cycle)


@contextlib.contextmanager
def manual_gc() -> Iterator[None]:
    """No automatic collections inside (``gc.collect()`` still runs): a cycle made inside waits
    for the collection the test places."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def finishes_within(seconds: float, check: Callable[[], None], what: str = "the check") -> None:
    """Run ``check`` in a daemon thread; AssertionError when it has not finished after
    ``seconds`` (a deadlock), else whatever it raised.

    The objects that exist before it are frozen (``gc.freeze``) while it runs, so the many
    collections a :class:`CollectingLock` makes scan only the check's own objects: late in a
    full test session each full collection walks everything the earlier tests left (~0.2 s),
    and an eight-thread stress test's hundreds of them outran the watchdog with no deadlock."""
    errors: list[BaseException] = []

    def body() -> None:
        try:
            check()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            errors.append(exc)

    thread = threading.Thread(target=body, name=f"finishes-within: {what}", daemon=True)
    gc.collect()
    gc.freeze()
    try:
        thread.start()
        thread.join(seconds)
    finally:
        gc.unfreeze()
    if thread.is_alive():
        raise AssertionError(
            f"{what} did not finish in {seconds:g} s: deadlocked? (as a finalizer does that the "
            f"garbage collector runs inside a locked section, if it takes the same lock)"
        )
    if errors:
        raise errors[0]


def in_threads(work: Callable[[int], None], count: int = 8) -> None:
    """Run ``work(k)`` for ``k`` in ``range(count)``, each in its own thread, all started
    together; waits for all, then re-raises the first failure (wrap in :func:`finishes_within`
    to bound the wait)."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def body(k: int) -> None:
        try:
            barrier.wait()
            work(k)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [
        threading.Thread(target=body, args=(k,), name=f"in-threads-{k}") for k in range(count)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise AssertionError(f"{len(errors)} of {count} threads failed: {errors[0]!r}") from errors[
            0
        ]
