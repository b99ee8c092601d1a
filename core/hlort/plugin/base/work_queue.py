"""A per-device, in-order work queue: the stream every asynchronous operation goes through.

Transfers and launches on a device are enqueued and run one at a time, in order, on the queue's
own thread, like work on a CUDA stream; the caller gets an :class:`AsyncValue` at once. A job
may first wait for events from other queues (a buffer produced on another device); a failed
dependency fails the job with the dependency's error without running it. The thread starts on
first use and is a daemon, so an unclosed queue never blocks interpreter exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from hlort.errors import FailedPrecondition
from hlort.plugin.api import Event
from hlort.plugin.base.events import AsyncValue

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
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

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
            self._jobs.put(job)
        return done

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
            _run_job(job)

    def __repr__(self) -> str:
        return f"<WorkQueue {self.name}>"


def _run_job(job) -> None:
    fn, done, waits_for = job
    try:
        for event in waits_for:
            event.wait()
        value = fn()
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the waiter
        done.set_error(exc)
        return
    done.set_result(value)
