"""PJRT events, tied to hlort's events: a PJRT_Event is a handle on an hlort Event."""

from __future__ import annotations

import ctypes

from hlort.errors import ErrorCode, HlortError
from hlort.plugin.base import AsyncValue
from hlort_jax.handles import HANDLES
from hlort_jax.pjrt_call import error_address, pjrt

_ON_READY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def new_event(event) -> int:
    return HANDLES.new(event)


def _error_address_of(error: HlortError | None) -> int | None:
    return None if error is None else error_address(error.code, error.message)


@pjrt("Event_Destroy")
def event_destroy(a) -> None:
    HANDLES.drop(a.event)


@pjrt("Event_IsReady")
def event_is_ready(a) -> None:
    a.is_ready = HANDLES.get(a.event).is_ready()


def _raise_error_of(event) -> None:
    error = event.error()
    if error is not None:
        raise error


@pjrt("Event_Error")
def event_error(a) -> None:
    _raise_error_of(HANDLES.get(a.event))


@pjrt("Event_Await")
def event_await(a) -> None:
    event = HANDLES.get(a.event)
    try:
        event.wait()
    except HlortError:
        pass
    _raise_error_of(event)


@pjrt("Event_OnReady")
def event_on_ready(a) -> None:
    event = HANDLES.get(a.event)
    callback = _ON_READY(a.callback)
    user_arg = a.user_arg

    def fire(error: HlortError | None) -> None:
        callback(_error_address_of(error), user_arg)

    event.on_ready(fire)


@pjrt("Event_Create")
def event_create(a) -> None:
    a.event = new_event(AsyncValue("PJRT_Event_Create"))


@pjrt("Event_Set")
def event_set(a) -> None:
    event = HANDLES.get(a.event)
    if not isinstance(event, AsyncValue) or event.is_ready():
        raise HlortError(
            "PJRT_Event_Set: the event was not made by PJRT_Event_Create or is already set",
            ErrorCode.FAILED_PRECONDITION,
        )
    if a.error_code == 0:
        event.set_result(None)
    else:
        message = ctypes.string_at(a.error_message, a.error_message_size).decode(errors="replace")
        event.set_error(HlortError(message, ErrorCode(a.error_code)))
