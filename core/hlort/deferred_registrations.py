"""Registrations a higher layer defers until a lower layer's registry is first read.

``import hlort`` must stay cheap (it runs in every pytest process where hlort is installed), so
it cannot import the reference interpreter just to register the custom-call targets hlort ships;
yet the IR's custom-call registry (a lower layer, which may not import the interpreter) must
know them from its first lookup, whatever was imported before. The public API therefore names a
loader here, and the registry runs the pending loaders of its name on first use. A loader runs
once; one that raises stays pending and raises again at the next read (a broken install is never
silently a registry without its targets).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_PENDING: dict[str, list[Callable[[], object]]] = {}
_LOCK = threading.RLock()


def defer(registry: str, loader: Callable[[], object]) -> None:
    """Run ``loader()`` before ``registry`` is next read (see :func:`run_deferred`)."""
    with _LOCK:
        _PENDING.setdefault(registry, []).append(loader)


def run_deferred(registry: str) -> None:
    """Run the loaders deferred for ``registry``, once each; cheap when none is pending. A loader
    that registers (and so reads the registry again) finds itself no longer pending."""
    if not _PENDING.get(registry):
        return
    with _LOCK:
        pending = _PENDING.get(registry, [])
        while pending:
            loader = pending.pop(0)
            try:
                loader()
            except BaseException:
                pending.insert(0, loader)
                raise
