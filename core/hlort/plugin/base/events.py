"""Events and futures a plugin can use as-is.

:class:`AsyncValue` is a settable :class:`~hlort.plugin.api.Future`: the producer calls
``set_result`` or ``set_error`` once, waiters block on a condition variable, and callbacks run
once in the thread that completes it (or at once, if it is already complete). Any exception a
producer reports becomes an :class:`~hlort.errors.HlortError` so waiters can branch on its code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from hlort.errors import ErrorCode, HlortError, Internal, ResourceExhausted
from hlort.log import lazy_logger
from hlort.plugin.api import Event, Future

T = TypeVar("T")
LOGGER = lazy_logger("hlort.events")
Callback = Callable[[HlortError | None], None]


def as_hlort_error(exc: BaseException, context: str = "") -> HlortError:
    """``exc`` itself if it is an HlortError, else INTERNAL naming its type (a plugin bug)."""
    if isinstance(exc, HlortError):
        return exc
    where = f" in {context}" if context else ""
    if isinstance(exc, MemoryError):  # NumPy's message names the bytes it could not get
        err = ResourceExhausted(f"out of host memory{where}: {exc}")
        err.__cause__ = exc
        return err
    err = Internal(f"unexpected {type(exc).__name__}{where}: {exc}")
    err.__cause__ = exc
    return err


class AsyncValue(Future[T], Generic[T]):
    """A value (or error) that becomes available later; completes exactly once."""

    def __init__(self, description: str = ""):
        self._cond = threading.Condition(threading.RLock())  # a finalizer may re-enter
        self._done = False
        self._value: T | None = None
        self._error: HlortError | None = None
        self._callbacks: list[Callback] = []
        self.description = description

    # -- producer side ----------------------------------------------------------------------
    def set_result(self, value: T = None) -> None:  # type: ignore[assignment]
        self._complete(value, None)

    def set_error(self, error: BaseException) -> None:
        self._complete(None, as_hlort_error(error, self.description))

    def _complete(self, value, error: HlortError | None) -> None:
        with self._cond:
            if self._done:
                raise Internal(f"{self.description or 'async value'} completed twice")
            self._value, self._error, self._done = value, error, True
            callbacks, self._callbacks = self._callbacks, []
            self._cond.notify_all()
        for callback in callbacks:
            _run_callback(callback, error)

    # -- consumer side ----------------------------------------------------------------------
    def is_ready(self) -> bool:
        return self._done

    def wait(self, timeout: float | None = None) -> None:
        if not self._done:
            with self._cond:
                if not self._cond.wait_for(lambda: self._done, timeout):
                    raise HlortError(
                        f"timed out after {timeout} s waiting for {self.description or 'an event'}",
                        ErrorCode.DEADLINE_EXCEEDED,
                    )
        if self._error is not None:
            raise self._error

    def error(self) -> HlortError | None:
        return self._error if self._done else None

    def result(self, timeout: float | None = None) -> T:
        self.wait(timeout)
        return self._value  # type: ignore[return-value]

    def on_ready(self, callback: Callback) -> None:
        with self._cond:
            if not self._done:
                self._callbacks.append(callback)
                return
        _run_callback(callback, self._error)

    def __repr__(self) -> str:
        state = "pending" if not self._done else ("error" if self._error else "ready")
        return f"<AsyncValue {self.description} {state}>"


class ElementOf(Future):
    """Element ``index`` of a future sequence, ready (or failed) with it.

    A launch completes all its outputs at once: one :class:`AsyncValue` holding the list of
    their storage, seen by each output through one of these, costs a fraction of an
    AsyncValue (and its condition variable) per output.
    """

    __slots__ = ("_whole", "_index")

    def __init__(self, whole: AsyncValue, index: int):
        self._whole = whole
        self._index = index

    def is_ready(self) -> bool:
        return self._whole._done

    def wait(self, timeout: float | None = None) -> None:
        self._whole.wait(timeout)

    def error(self) -> HlortError | None:
        return self._whole.error()

    def result(self, timeout: float | None = None):
        return self._whole.result(timeout)[self._index]

    def on_ready(self, callback: Callback) -> None:
        self._whole.on_ready(callback)

    @property
    def description(self) -> str:
        return f"{self._whole.description} [{self._index}]"

    def __repr__(self) -> str:
        return f"<ElementOf {self._index} of {self._whole!r}>"


def _run_callback(callback: Callback, error: HlortError | None) -> None:
    # A failing callback must not break the producer nor the other callbacks.
    try:
        callback(error)
    except Exception:  # noqa: BLE001
        LOGGER.exception("an event callback raised (the event and its other callbacks go on)")


def ready_value(value: T = None, description: str = "") -> AsyncValue[T]:  # type: ignore[assignment]
    """An already-completed value (for synchronous work)."""
    out: AsyncValue[T] = AsyncValue(description)
    out.set_result(value)
    return out


def failed_value(error: BaseException, description: str = "") -> AsyncValue:
    out: AsyncValue = AsyncValue(description)
    out.set_error(error)
    return out


def all_ready(events: Iterable[Event], description: str = "") -> AsyncValue[None]:
    """Ready when every event is; fails with the first error seen."""
    events = list(events)
    out: AsyncValue[None] = AsyncValue(description)
    if not events:
        out.set_result(None)
        return out
    lock = threading.Lock()
    state = {"left": len(events), "error": None}

    def one_done(error: HlortError | None) -> None:
        with lock:
            if error is not None and state["error"] is None:
                state["error"] = error
            state["left"] -= 1
            finished = state["left"] == 0
        if finished:
            if state["error"] is not None:
                out.set_error(state["error"])
            else:
                out.set_result(None)

    for event in events:
        event.on_ready(one_done)
    return out
