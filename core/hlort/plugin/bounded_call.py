"""Calls into plugin code that may never return: ``probe()`` and ``create_client()``.

A plugin is third-party code; one whose probe sleeps for ever must not hang ``hlort devices``,
``hlort.backends()`` or a compile for another platform. Each such call runs on its own daemon
thread, and the registry waits for it at most ``HLORT_PLUGIN_TIMEOUT`` seconds (default 20)
from the moment it started, only when it needs the answer. A call that has not returned by then
is reported as timed out; its thread is left to finish (or not) on its own.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

from hlort.errors import InvalidArgument

TIMEOUT_ENV = "HLORT_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT_S = 20.0


def plugin_timeout_s(environ: dict[str, str] | None = None) -> float:
    """Seconds a probe or client creation may take (``HLORT_PLUGIN_TIMEOUT``)."""
    raw = (os.environ if environ is None else environ).get(TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise InvalidArgument(
            f"{TIMEOUT_ENV}={raw!r} must be a positive number of seconds "
            f"(default {DEFAULT_TIMEOUT_S:g})"
        )
    return value


class BoundedCall:
    """``fn()`` running on a daemon thread; :meth:`wait` says whether it finished in time.
    With ``start=False`` the thread starts at :meth:`start` or the first :meth:`wait`."""

    def __init__(self, fn: Callable[[], Any], what: str, *, start: bool = True):
        self.what = what
        self.result: Any = None
        self.error: BaseException | None = None
        self.trace = ""
        self.started: float | None = None
        self._fn = fn
        self._start_lock = threading.Lock()
        self._done = threading.Event()
        if start:
            self.start()

    def start(self) -> None:
        """Start the call's thread, unless it is started already (idempotent, thread-safe)."""
        with self._start_lock:
            if self.started is not None:
                return
            self.started = time.monotonic()
        name = f"hlort {self.what}"
        threading.Thread(target=self._run, args=(self._fn,), name=name, daemon=True).start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.result = fn()
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: reported, not raised
            import traceback  # only on failure: ~1 ms of a first compile otherwise

            self.error = exc
            self.trace = traceback.format_exc()
        finally:
            self._done.set()

    def wait(self, timeout_s: float) -> bool:
        """True once ``fn`` returned or raised; False if ``timeout_s`` after the start passed.
        Starts the call if nothing has."""
        self.start()
        left = self.started + timeout_s - time.monotonic()
        return self._done.wait(max(left, 0.0))
