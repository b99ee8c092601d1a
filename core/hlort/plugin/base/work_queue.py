"""A per-device, in-order work queue: the stream every asynchronous operation goes through.

Transfers and launches on a device are enqueued and run one at a time, in order, on the queue's
own thread, like work on a CUDA stream; the caller gets an :class:`AsyncValue` at once. A job
may first wait for events from other queues (a buffer produced on another device); a failed
dependency fails the job with the dependency's error without running it. The thread starts on
first use and is a daemon, so an unclosed queue never blocks interpreter exit.

:meth:`WorkQueue.run_inline_if_idle` runs a job on the caller's thread instead when nothing is
queued or running: the order is the same as if it had been enqueued (it would have run next),
and a cheap job saves the hand-off to the worker thread (XLA's CPU client runs cheap programs
inline for the same reason). Jobs enqueued meanwhile wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from hlort.errors import FailedPrecondition
from hlort.plugin.api import Event
from hlort.plugin.base.events import AsyncValue

try:  # the C class queue.SimpleQueue is: the queue module adds heapq and pure-Python queues
    from _queue import SimpleQueue  # (~0.5 ms of every process's first compile)
except ImportError:  # another Python implementation
    from queue import SimpleQueue

T = TypeVar("T")

_STOP = object()


class WorkQueue:
    """Runs submitted callables in submission order on one worker thread.

    ``synchronous=True`` runs each job in the submitting thread instead (for debugging, and
    for plugins whose hardware calls must stay on the caller's thread).
    """

    def __init__(self, name: str, synchronous: bool = False):
        self.name = name
        self.synchronous = synchronous
        self._jobs: SimpleQueue = SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._pending = 0  # enqueued and not yet finished
        self._running = threading.Lock()  # held while a job runs (worker or inline)

    def enqueue(
        self,
        fn: Callable[[], T],
        description: str = "",
        waits_for: Sequence[Event] = (),
    ) -> AsyncValue[T]:
        """Schedule ``fn()``; its return value (or exception) completes the returned value."""
        done: AsyncValue[T] = AsyncValue(description or f"work on {self.name}")
        job = (fn, done, tuple(waits_for))
        if self.synchronous:
            _run_job(job)
            return done
        with self._lock:
            if self._closed:
                raise FailedPrecondition(f"work queue {self.name} is closed; the client was closed")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._worker, name=f"hlort-{self.name}", daemon=True
                )
                self._thread.start()
            self._pending += 1
            self._jobs.put(job)
        return done

    def run_inline_if_idle(self, fn: Callable[[], object]) -> bool:
        """Run ``fn()`` now on this thread if no job is queued or running, and say whether it
        did; jobs enqueued while it runs start after it. ``fn`` handles its own errors (an
        exception propagates to the caller). A synchronous queue always runs it."""
        if not self.synchronous:
            with self._lock:
                if self._closed:
                    raise FailedPrecondition(
                        f"work queue {self.name} is closed; the client was closed"
                    )
                if self._pending or not self._running.acquire(blocking=False):
                    return False
            try:
                fn()
            finally:
                self._running.release()
            return True
        fn()
        return True

    def synchronize(self, timeout: float | None = None) -> None:
        """Wait until everything enqueued so far has run."""
        self.enqueue(lambda: None, f"synchronize {self.name}").wait(timeout)

    def close(self, wait: bool = True) -> None:
        """Stop accepting work; with ``wait``, let queued work finish and join the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._jobs.put(_STOP)
        if thread is not None and wait and thread is not threading.current_thread():
            thread.join()

    @property
    def closed(self) -> bool:
        return self._closed

    def _worker(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            with self._running:
                outcome = _attempt(job)
            with self._lock:  # idle again before the waiters wake (they may run inline next)
                self._pending -= 1
            # drop the job (its closure may hold buffers whose owners dropped them) before its
            # waiters wake, and keep nothing of it alive while waiting for the next one
            done, job = job[1], None
            _complete(done, outcome)
            done = outcome = None

    def __repr__(self) -> str:
        return f"<WorkQueue {self.name}>"


def _run_job(job) -> None:
    _complete(job[1], _attempt(job))


def _attempt(job) -> tuple[object, BaseException | None]:
    fn, _, waits_for = job
    try:
        for event in waits_for:
            event.wait()
        return fn(), None
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the waiter
        return None, exc


def _complete(done: AsyncValue, outcome: tuple[object, BaseException | None]) -> None:
    value, error = outcome
    if error is not None:
        done.set_error(error)
    else:
        done.set_result(value)
