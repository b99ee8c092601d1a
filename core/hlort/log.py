"""hlort's logging: the ``hlort`` logger and its children, ``HLORT_LOG_LEVEL``, the CLI's ``-v``.

Library code never prints: it logs on a child of ``hlort`` (``hlort.registry``: which backend
became the default and why; ``hlort.compile``: compile-cache hits and misses; ``hlort.cache``:
evictions; ``hlort.fallback``: instructions run on the reference interpreter; ``hlort.passes``:
each pass's decision, at DEBUG; ``hlort.events``: a failing event callback). Like any library,
it installs no handler of its own, so an application's logging configuration decides what is
shown, with one opt-in: ``HLORT_LOG_LEVEL=DEBUG|INFO|WARNING|ERROR`` (or ``hlort -v``/``-vv``)
attaches one stderr handler to ``hlort`` at that level. Python's last-resort handler still
shows warnings (an unsafe cache directory, a fallback) when nothing is configured.
"""

from __future__ import annotations

import logging
import os
import sys

ROOT = "hlort"
ENV_VAR = "HLORT_LOG_LEVEL"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMAT = "hlort: %(levelname)s: %(name)s: %(message)s"
_handler: logging.Handler | None = None


def get_logger(name: str = "") -> logging.Logger:
    """``hlort`` or its child ``hlort.<name>``."""
    return logging.getLogger(f"{ROOT}.{name}" if name else ROOT)


def level_named(value: str) -> int:
    """``"debug"``/``"INFO"``/``"10"`` -> a logging level; ValueError naming the choices."""
    text = str(value).strip().upper()
    if text.isdigit():
        return int(text)
    if text == "WARN":
        text = "WARNING"
    if text not in LEVELS:
        raise ValueError(f"{ENV_VAR}={value!r} is not a log level; use one of {', '.join(LEVELS)}")
    return getattr(logging, text)


def enable(level: int | str, stream=None) -> logging.Handler:
    """Show ``hlort``'s records at ``level`` and above on ``stream`` (stderr): one handler,
    replaced (not added to) by a later call."""
    global _handler
    if isinstance(level, str):
        level = level_named(level)
    logger = get_logger()
    if _handler is not None:
        logger.removeHandler(_handler)
    _handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    _handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(_handler)
    logger.setLevel(level)
    return _handler


def disable() -> None:
    """Undo :func:`enable` (tests)."""
    global _handler
    logger = get_logger()
    if _handler is not None:
        logger.removeHandler(_handler)
        _handler = None
    logger.setLevel(logging.NOTSET)


def configure_from_env() -> None:
    """Apply ``HLORT_LOG_LEVEL`` once, if set; a bad value is reported as a warning (not raised:
    this runs while hlort starts up) and ignored."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value or _handler is not None:
        return
    try:
        enable(level_named(value))
    except ValueError as err:
        get_logger().warning("%s; logging stays as configured", err)


def verbosity_level(verbose: int) -> int | None:
    """The CLI's ``-v`` count -> a level: 1 INFO, 2+ DEBUG, 0 None (leave it to the env)."""
    if verbose <= 0:
        return None
    return logging.INFO if verbose == 1 else logging.DEBUG
