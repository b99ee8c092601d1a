"""The on-disk caches' size cap: least-recently-used entries go first.

Every file under the cache root (hlort.plugin.base.cache_dir: the executable cache, the cpu
plugin's object code, any plugin's own directory) counts. ``HLORT_CACHE_MAX_BYTES`` (default
1 GiB; ``512M``, ``2G`` and plain byte counts accepted) caps the total: after a write takes
the cache over it, the entries used longest ago are deleted until it fits. "Used" is the file's
modification time, which a write sets and a cache hit refreshes (:func:`mark_used`), so it is
LRU on every filesystem (access times are often not kept). A process scans the root once and
then keeps a running total, rescanning only when the total passes the cap (another process may
have written or deleted meanwhile). Deleting an entry another process is about to read is safe:
a missing entry is a cache miss.

Only directories hlort made count: each cache subdirectory holds a ``MARKER`` file
(:func:`hlort.plugin.base.cache_dir.private_cache_dir` writes it), so a root pointed at a
directory holding other files (``HLORT_CACHE_DIR=~``) never loses them to eviction or
``hlort cache clear``.
"""

from __future__ import annotations

import os
import re
import threading

from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass
from hlort.log import lazy_logger

ENV_VAR = "HLORT_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 1 << 30
LOGGER = lazy_logger("hlort.cache")
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.I)
MARKER = ".hlort-cache"
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_usage: dict[str, int] = {}  # cache root -> bytes, as this process last knew it
_lock = threading.Lock()


@dataclass(frozen=True)
class CacheEntry:
    path: str
    size: int
    used: float  # modification time: last write or hit


def max_bytes() -> int:
    """The cap ``HLORT_CACHE_MAX_BYTES`` sets; INVALID_ARGUMENT naming the forms otherwise."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return DEFAULT_MAX_BYTES
    m = _SIZE.match(value)
    if m is None:
        raise InvalidArgument(
            f"{ENV_VAR}={value!r} is not a size; use a byte count or a number with K, M, G or "
            f"T (e.g. 512M, 2G)"
        )
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def entries(root: str) -> list[CacheEntry]:
    """Every cache file in ``root``'s marked cache subdirectories (not the marker, nor the
    temporary files of writes in progress)."""
    found: list[CacheEntry] = []
    try:
        tops = [os.path.join(root, d) for d in sorted(os.listdir(root))]
    except OSError:
        return found
    for top in tops:
        if not os.path.isfile(os.path.join(top, MARKER)) or os.path.islink(top):
            continue
        found.extend(_files_under(top))
    return found


def _files_under(top: str) -> list[CacheEntry]:
    found: list[CacheEntry] = []
    for directory, _dirs, files in os.walk(top):
        for name in files:
            if name.startswith("tmp") or name == MARKER:  # tmp: mkstemp's, renamed when done
                continue
            path = os.path.join(directory, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            found.append(CacheEntry(path, info.st_size, info.st_mtime))
    return found


def mark_used(path: str) -> None:
    """A cache hit on ``path``: it becomes the most recently used entry."""
    try:
        os.utime(path)
    except OSError:
        pass


def note_written(root: str, size: int) -> None:
    """A write of ``size`` bytes under ``root`` finished: evict if the cache is over its cap."""
    cap = max_bytes()
    with _lock:
        if root not in _usage:
            _usage[root] = sum(e.size for e in entries(root))
        else:
            _usage[root] += size
        if _usage[root] > cap:
            _usage[root] = _evict(root, cap)


def evict(root: str, cap: int | None = None) -> int:
    """Delete least-recently-used entries until ``root`` holds at most ``cap`` bytes; the
    bytes left."""
    with _lock:
        _usage[root] = _evict(root, max_bytes() if cap is None else cap)
        return _usage[root]


def _evict(root: str, cap: int) -> int:
    found = sorted(entries(root), key=lambda e: e.used)
    total = sum(e.size for e in found)
    removed, freed = 0, 0
    for entry in found:
        if total <= cap:
            break
        try:
            os.remove(entry.path)
        except OSError:
            continue
        total -= entry.size
        removed, freed = removed + 1, freed + entry.size
    if removed:
        LOGGER.info(
            "compile cache over %s=%d: evicted %d least recently used entr%s (%d bytes) from %s",
            ENV_VAR,
            cap,
            removed,
            "y" if removed == 1 else "ies",
            freed,
            root,
        )
    return total


def clear(root: str) -> tuple[int, int]:
    """Delete every entry under ``root`` (and the directories left empty): (files, bytes)."""
    found = entries(root)
    removed, freed = 0, 0
    for entry in found:
        try:
            os.remove(entry.path)
        except OSError:
            continue
        removed, freed = removed + 1, freed + entry.size
    for entry_dir in sorted({os.path.dirname(e.path) for e in found}, key=lambda d: -len(d)):
        while entry_dir != root and not os.path.isfile(os.path.join(entry_dir, MARKER)):
            try:
                os.rmdir(entry_dir)  # emptied subdirectories of a cache directory
            except OSError:
                break  # not empty (a write in progress)
            entry_dir = os.path.dirname(entry_dir)
    with _lock:
        _usage.pop(root, None)
    return removed, freed


def forget_usage() -> None:
    """Rescan on the next write (tests that change the cache behind this process's back)."""
    with _lock:
        _usage.clear()
