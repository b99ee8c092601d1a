"""The on-disk caches' size cap: least-recently-used entries go first.

Every file under the cache root (hlort.plugin.base.cache_dir: the executable cache, the cpu
plugin's object code, any plugin's own directory) counts. ``HLORT_CACHE_MAX_BYTES`` (default
1 GiB; ``512M``, ``2G`` and plain byte counts accepted) caps the total: after a write takes
the cache over it, the entries used longest ago are deleted until it fits. "Used" is the file's
modification time, which a write sets and a cache hit refreshes (:func:`mark_used`), so it is
LRU on every filesystem (access times are often not kept). A process learns the total once and
then keeps a running total, rescanning only when the total passes the cap (another process may
have written or deleted meanwhile). Deleting an entry another process is about to read is safe:
a missing entry is a cache miss.

Learning the total by a scan stats every entry: ~120 ms of a process's first cache write with
a 107 MiB cache of 32k entries (the first compile of every fresh process that misses). So each
cache directory has a record of its bytes (a file named after it in the root's :data:`USAGE`
directory, out of every cache directory's listing: the total and when it was last scanned),
which a write adds its size to and a scan rewrites; a process reads
the records, and scans only a directory whose record is missing, damaged or from a scan more
than :data:`USAGE_MAX_AGE_S` ago (so the record cannot drift far from the truth when
concurrent writers lose an addition, or files go behind hlort's back).

Only directories hlort made count: each cache subdirectory holds a ``MARKER`` file
(:func:`hlort.plugin.base.cache_dir.private_cache_dir` writes it), so a root pointed at a
directory holding other files (``HLORT_CACHE_DIR=~``) never loses them to eviction or
``hlort cache clear``.
"""

from __future__ import annotations

import os
import re
import threading
import time

from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass
from hlort.log import lazy_logger

ENV_VAR = "HLORT_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 1 << 30
LOGGER = lazy_logger("hlort.cache")
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.I)
MARKER = ".hlort-cache"
USAGE = ".hlort-usage"  # in the root; its file NAME: "<bytes> <unix time of NAME's last scan>"
USAGE_MAX_AGE_S = 3600.0
_RECORD_WIDTH = 64  # bytes of a usage record: "<bytes> <scan time>", padded
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
    """Every cache file in ``root``'s marked cache subdirectories (not the marker, the usage
    record, nor the temporary files of writes in progress)."""
    found: list[CacheEntry] = []
    for top in _cache_dirs(root):
        found.extend(_files_under(top))
    return found


def _cache_dirs(root: str) -> list[str]:
    try:
        tops = [os.path.join(root, d) for d in sorted(os.listdir(root))]
    except OSError:
        return []
    return [t for t in tops if os.path.isfile(os.path.join(t, MARKER)) and not os.path.islink(t)]


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


def note_written(root: str, size: int, path: str | None = None) -> None:
    """A write of ``size`` bytes to ``path`` under ``root`` finished: add it to its directory's
    usage record; evict if the cache is over its cap."""
    cap = max_bytes()
    top = _top_of(root, path)
    with _lock:
        counted = False  # whether a scan just now saw the new file already
        if root not in _usage:
            now, total = time.time(), 0
            for directory in _cache_dirs(root):
                recorded = _read_usage(directory, now)
                if recorded is None:
                    total += _scan(directory, now)
                    counted = counted or directory == top
                else:
                    total += recorded[0]
            _usage[root] = total + (0 if counted else size)
        else:
            _usage[root] += size
        if top is not None and not counted:
            _add_usage(top, size)
        if _usage[root] > cap:
            _usage[root] = _evict(root, cap)


def _top_of(root: str, path: str | None) -> str | None:
    """The cache directory (``root``'s child) ``path`` is in, if it is a marked one."""
    if path is None:
        return None
    rel = os.path.relpath(path, root)
    first = rel.split(os.sep, 1)[0]
    if first in ("", ".", "..") or first == rel:
        return None
    top = os.path.join(root, first)
    return top if os.path.isfile(os.path.join(top, MARKER)) else None


def _read_usage(directory: str, now: float) -> tuple[int, float] | None:
    """(bytes, scan time) of ``directory``'s usage record, or None: none, damaged, or from a
    scan more than USAGE_MAX_AGE_S ago (or in the future)."""
    try:
        with open(_usage_path(directory)) as f:
            text = f.read(100).split()
        size, scanned = int(text[0]), float(text[1])
    except (OSError, ValueError, IndexError):
        return None
    if size < 0 or not 0.0 <= now - scanned <= USAGE_MAX_AGE_S:
        return None
    return size, scanned


def _usage_path(directory: str) -> str:
    root, name = os.path.split(os.path.normpath(directory))
    return os.path.join(root, USAGE, name)


def _write_usage(directory: str, size: int, scanned: float) -> None:
    """Overwrite ``directory``'s usage record in place (best effort): one write of a
    fixed-width line at the start of the file, not a new file renamed over the old one. On
    ext4 a rename that replaces a file first writes the new file's data out (``auto_da_alloc``):
    0.3-13 ms a record on the loaded development machine, up to three times a compile with an
    existing cache, against ~0.01 ms in place. A reader racing the write may see a mix of the
    two lines; the record is an estimate anyway (concurrent writers can lose an addition), and
    a damaged one is rescanned."""
    path = _usage_path(directory)
    record = f"{size} {scanned!r}".ljust(_RECORD_WIDTH - 1).encode() + b"\n"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            os.write(fd, record)
            if os.fstat(fd).st_size > len(record):  # a longer record an older hlort wrote
                os.ftruncate(fd, len(record))
        finally:
            os.close(fd)
    except OSError:
        pass


def _scan(directory: str, now: float) -> int:
    """``directory``'s bytes, counted file by file; its usage record rewritten."""
    size = sum(e.size for e in _files_under(directory))
    _write_usage(directory, size, now)
    return size


def _add_usage(directory: str, size: int) -> None:
    """Add ``size`` to ``directory``'s record if it is current (else the next reader scans)."""
    recorded = _read_usage(directory, time.time())
    if recorded is not None:
        _write_usage(directory, recorded[0] + size, recorded[1])


def evict(root: str, cap: int | None = None) -> int:
    """Delete least-recently-used entries until ``root`` holds at most ``cap`` bytes; the
    bytes left."""
    with _lock:
        _usage[root] = _evict(root, max_bytes() if cap is None else cap)
        return _usage[root]


def _evict(root: str, cap: int) -> int:
    now = time.time()
    per_dir = {d: _files_under(d) for d in _cache_dirs(root)}
    found = sorted(((e, d) for d, files in per_dir.items() for e in files), key=lambda x: x[0].used)
    left = {d: sum(e.size for e in files) for d, files in per_dir.items()}
    total = sum(left.values())
    removed, freed = 0, 0
    for entry, directory in found:
        if total <= cap:
            break
        try:
            os.remove(entry.path)
        except OSError:
            continue
        total -= entry.size
        left[directory] -= entry.size
        removed, freed = removed + 1, freed + entry.size
    for directory, size in left.items():  # the scan just now is each directory's new record
        _write_usage(directory, size, now)
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
    for directory in _cache_dirs(root):
        try:
            os.remove(_usage_path(directory))
        except OSError:
            pass
    with _lock:
        _usage.pop(root, None)
    return removed, freed


def forget_usage() -> None:
    """Rescan on the next write (tests that change the cache behind this process's back)."""
    with _lock:
        _usage.clear()
