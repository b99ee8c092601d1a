"""hlort's logging: the ``hlort`` logger and its children, ``HLORT_LOG_LEVEL``, the CLI's ``-v``.

Library code never prints: it logs on a child of ``hlort`` (``hlort.registry``: which backend
became the default and why; ``hlort.compile``: compile-cache hits and misses; ``hlort.cache``:
evictions; ``hlort.fallback``: instructions run on the reference interpreter; ``hlort.passes``:
each pass's decision, at DEBUG; ``hlort.events``: a failing event callback). Like any library,
it installs no handler of its own, so an application's logging configuration decides what is
shown, with one opt-in: ``HLORT_LOG_LEVEL=DEBUG|INFO|WARNING|ERROR`` (or ``hlort -v``/``-vv``)
attaches one stderr handler to ``hlort`` at that level. Python's last-resort handler still
shows warnings (an unsafe cache directory, a fallback) when nothing is configured.

Modules take their logger from :func:`lazy_logger`, which imports :mod:`logging` (~10M
instructions, a fresh process's first compile paid it for records nobody sees) only for a
record that can be shown: before anything imported :mod:`logging`, nothing can have configured
it, so a DEBUG or INFO record is dropped as the default root level (WARNING) would drop it.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import logging

ROOT = "hlort"
ENV_VAR = "HLORT_LOG_LEVEL"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMAT = "hlort: %(levelname)s: %(name)s: %(message)s"
_handler: logging.Handler | None = None


def get_logger(name: str = "") -> logging.Logger:
    """``hlort`` or its child ``hlort.<name>``."""
    import logging

    return logging.getLogger(f"{ROOT}.{name}" if name else ROOT)


class LazyLogger:
    """``logging.getLogger(name)``, fetched on the first record that can be shown (above)."""

    __slots__ = ("name", "_logger")

    def __init__(self, name: str):
        self.name = name
        self._logger: logging.Logger | None = None

    def __repr__(self) -> str:
        return f"LazyLogger({self.name!r})"

    @property
    def logger(self) -> logging.Logger:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    def _quiet(self) -> bool:
        return self._logger is None and "logging" not in sys.modules

    def debug(self, msg, *args, **kwargs) -> None:
        if not self._quiet():
            self.logger.debug(msg, *args, **_caller(kwargs))

    def info(self, msg, *args, **kwargs) -> None:
        if not self._quiet():
            self.logger.info(msg, *args, **_caller(kwargs))

    def warning(self, msg, *args, **kwargs) -> None:
        self.logger.warning(msg, *args, **_caller(kwargs))

    def error(self, msg, *args, **kwargs) -> None:
        self.logger.error(msg, *args, **_caller(kwargs))

    def exception(self, msg, *args, **kwargs) -> None:
        self.logger.exception(msg, *args, **_caller(kwargs))

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging's spelling
        return not (self._quiet() and level < 30) and self.logger.isEnabledFor(level)


def _caller(kwargs: dict) -> dict:
    """The record names the caller of LazyLogger's method, not the method."""
    kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
    return kwargs


def lazy_logger(name: str) -> LazyLogger:
    """A logger for ``name`` (``hlort`` or a child) that imports :mod:`logging` when needed."""
    return LazyLogger(name)


def level_named(value: str) -> int:
    """``"debug"``/``"INFO"``/``"10"`` -> a logging level; ValueError naming the choices."""
    text = str(value).strip().upper()
    if text.isdigit():
        return int(text)
    if text == "WARN":
        text = "WARNING"
    if text not in LEVELS:
        raise ValueError(f"{ENV_VAR}={value!r} is not a log level; use one of {', '.join(LEVELS)}")
    import logging

    return getattr(logging, text)


def enable(level: int | str, stream=None) -> logging.Handler:
    """Show ``hlort``'s records at ``level`` and above on ``stream`` (stderr): one handler,
    replaced (not added to) by a later call."""
    import logging

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
    import logging

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
    return 20 if verbose == 1 else 10  # logging.INFO, logging.DEBUG
