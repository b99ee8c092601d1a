"""How a Python handler becomes a PJRT function: argument struct in, PJRT_Error* out.

``@pjrt("Buffer_Dimensions")`` registers a handler that receives the ctypes view of its
argument struct. It returns None on success; an HlortError it raises becomes a PJRT_Error with
the same code and message (hlort's codes are absl's); any other exception becomes INTERNAL
naming the function. Functions without a handler answer UNIMPLEMENTED naming themselves.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys
from collections.abc import Callable

from hlort.errors import ErrorCode, HlortError
from hlort_jax import _trampoline, abi_table
from hlort_jax.abi_structs import STRUCTS

log = logging.getLogger("hlort_jax")
HANDLERS: dict[str, Callable[[int], int | None]] = {}


def error_address(code: ErrorCode | int, message: str) -> int:
    value = code.value if isinstance(code, ErrorCode) else int(code)
    return _trampoline.make_error(value, message)


def error_of(exc: BaseException, function: str) -> int:
    if isinstance(exc, HlortError):
        return error_address(exc.code, exc.message)
    log.debug("PJRT_%s raised", function, exc_info=exc)
    return error_address(
        ErrorCode.INTERNAL,
        f"hlort-jax: PJRT_{function} failed with {type(exc).__name__}: {exc} (a bug in the "
        f"bridge; please report it with the program)",
    )


def pjrt(function: str):
    """Register the decorated ``handler(args)`` as PJRT_<function>."""
    if function not in abi_table.INDEX:
        raise ValueError(f"PJRT_{function} is not in the API table")
    struct = STRUCTS.get(f"{function}_Args")

    def register(handler):
        if struct is None:

            def call(address: int):
                try:
                    handler(address)
                except BaseException as exc:  # noqa: BLE001 - every failure becomes a PJRT_Error
                    return error_of(exc, function)
                return None

        else:
            from_address = struct.from_address

            def call(address: int):
                try:
                    handler(from_address(address))
                except BaseException as exc:  # noqa: BLE001
                    return error_of(exc, function)
                return None

        call.__name__ = f"PJRT_{function}"
        HANDLERS[function] = call
        return handler

    return register


def unimplemented_handler(function: str) -> Callable[[int], int]:
    message = (
        f"PJRT_{function} is not implemented by hlort-jax (the hlort bridge); it supports "
        f"single-device programs: see plugins/jax/README.md"
    )

    def call(address: int) -> int:
        return error_address(ErrorCode.UNIMPLEMENTED, message)

    call.__name__ = f"PJRT_{function}_unimplemented"
    return call


TRACE_ENV = "HLORT_JAX_TRACE"


def _traced(name: str, call: Callable[[int], int | None]) -> Callable[[int], int | None]:
    """``call`` that first writes ``PJRT_<name>`` to stderr (and ``-> error`` after a failure):
    which functions jaxlib calls, in order (C-cached getters show their first call only)."""

    def traced(address: int):
        sys.stderr.write(f"hlort-jax trace: PJRT_{name}\n")
        result = call(address)
        if result:
            sys.stderr.write(f"hlort-jax trace: PJRT_{name} -> error\n")
        return result

    traced.__name__ = call.__name__
    return traced


def handler_tuple() -> tuple:
    """The handlers in PJRT_Api order (the three error functions are native: None), then
    those of the extension functions (abi_table.EXTENSION_FUNCTIONS).
    ``HLORT_JAX_TRACE=1`` wraps each in :func:`_traced` (read once, when the table is built)."""
    trace = os.environ.get(TRACE_ENV, "") not in ("", "0")
    out = []
    for name, _ in abi_table.SLOTS:
        if name.startswith("Error_"):
            out.append(None)
            continue
        call = HANDLERS.get(name) or unimplemented_handler(name)
        out.append(_traced(name, call) if trace else call)
    return tuple(out)


class CStrings:
    """NUL-terminated copies of strings, kept alive as long as their owner."""

    def __init__(self) -> None:
        self._keep: list = []

    def put(self, text: str | bytes) -> tuple[int, int]:
        data = text.encode() if isinstance(text, str) else text
        buf = ctypes.create_string_buffer(data, len(data) + 1)
        self._keep.append(buf)
        return ctypes.addressof(buf), len(data)

    def array(self, ctype, values) -> int:
        values = list(values)
        arr = (ctype * max(1, len(values)))(*values)
        self._keep.append(arr)
        return ctypes.addressof(arr)

    def hold(self, obj) -> None:
        self._keep.append(obj)
