"""No full garbage collection inside a compile: Python's cyclic collector is paused while one runs.

A compile allocates tens of thousands of objects that live until it ends (the module's
instructions, fused computations, llvmlite's IR), and enough of them survive two young
collections that CPython starts full ones, which walk every object of the process, not just
the compile's. In a process that imported jax (~120,000 objects) each took 50-75 ms CPU: the
MLP training step's compile paid one (54 ms of 254), the AdamW step's two (76 of 445).
Paused, neither compile pays any, and the first call after pays a few young collections
(3-7 ms). Most of a compile's garbage is freed by reference counting when it ends; what
cycles remain are collected by the next collection the process runs, as they would have been.

Process-wide and re-entrant: the first compile in disables the collector (only if it was
enabled: a program that disabled it keeps it so), the last one out enables it again; other
threads allocate without cyclic collection meanwhile (a compile lasts well under a second).
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

_LOCK = threading.Lock()
_depth = 0
_paused = False  # whether this module disabled the collector (and so enables it again)


def _enter() -> None:
    global _depth, _paused
    with _LOCK:
        if _depth == 0 and gc.isenabled():
            gc.disable()
            _paused = True
        _depth += 1


def _leave() -> None:
    global _depth, _paused
    with _LOCK:
        _depth -= 1
        if _depth == 0 and _paused:
            _paused = False
            gc.enable()


def collection_paused(fn: F) -> F:
    """Run ``fn`` with the cyclic collector paused (see the module docstring)."""

    @functools.wraps(fn)
    def paused(*args, **kwargs):
        _enter()
        try:
            return fn(*args, **kwargs)
        finally:
            _leave()

    return paused  # type: ignore[return-value]
