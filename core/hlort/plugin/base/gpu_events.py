"""Driver events mapped onto hlort's events: an AsyncValue completes when a stream event fires.

Work is enqueued on a device's stream and returns at once; what was enqueued is finished when an
event recorded after it fires. One watcher thread per device waits for those events in record
order (events of one stream fire in that order) and then completes the :class:`AsyncValue` that
stands for the work, with the driver's error when the work failed. Host arrays a copy reads or
writes are kept alive until then. The thread starts on first use and is a daemon.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

from hlort.errors import FailedPrecondition
from hlort.plugin.base.events import AsyncValue
from hlort.plugin.base.gpu_driver import GpuDriver, Handle

_STOP = object()


class StreamEventWatcher:
    """Completes values when the stream events recorded for them fire, in order."""

    def __init__(self, driver: GpuDriver, ordinal: int, name: str):
        self.driver = driver
        self.ordinal = ordinal
        self.name = name
        self._items: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    def record(
        self,
        stream: Handle,
        value: AsyncValue,
        result: Any = None,
        keep_alive: Any = None,
        then: Callable[[], Any] | None = None,
    ) -> AsyncValue:
        """Record an event on ``stream`` now; when it fires, ``value`` gets ``result`` (or what
        ``then()`` returns, run on the watcher thread: a host-side step after the device's).
        After :meth:`close` nothing would ever complete it: FAILED_PRECONDITION instead."""
        if self._closed:
            raise FailedPrecondition(
                f"{self.name}: work recorded after the client was closed; "
                "create a new client for more work"
            )
        event = self.driver.event_create(self.ordinal)
        try:
            self.driver.event_record(event, stream)
        except BaseException:
            self.driver.event_destroy(event)
            raise
        with self._lock:
            if self._closed:  # closed while the event was being recorded
                self.driver.event_destroy(event)
                raise FailedPrecondition(
                    f"{self.name}: work recorded after the client was closed; "
                    "create a new client for more work"
                )
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._worker, name=f"hlort-{self.name}-events", daemon=True
                )
                self._thread.start()
            self._items.put((event, value, result, keep_alive, then))
        return value

    def close(self) -> None:
        """Stop after the events already recorded have fired; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            if thread is not None:
                self._items.put(_STOP)
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _worker(self) -> None:
        while True:
            item = self._items.get()
            if item is _STOP:
                return
            event, value, result, _keep_alive, then = item
            try:
                self.driver.event_synchronize(event)
                if then is not None:
                    result = then()
            except BaseException as exc:  # noqa: BLE001 - every failure goes to the waiter
                value.set_error(exc)
            else:
                value.set_result(result)
            finally:
                try:
                    self.driver.event_destroy(event)
                except Exception:  # noqa: BLE001 - a failed destroy must not stop the watcher
                    pass
