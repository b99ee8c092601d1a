"""What the registry says on the ``hlort.registry`` logger: which backend became the default."""

from __future__ import annotations

from hlort.log import lazy_logger

LOGGER = lazy_logger("hlort.registry")
_said: set[str] = set()


def log_default(name: str, why: str, skipped: list[str]) -> None:
    """INFO once per process and backend: the default backend, why, and what was skipped."""
    if name in _said:
        return
    _said.add(name)
    passed = f"; skipped: {'; '.join(skipped)}" if skipped else ""
    LOGGER.info("default backend: %s (%s%s)", name, why, passed)
