"""Where hlort's on-disk caches live, and the check that the place is private.

The caches hold what this process will run (the cpu plugin's entries are machine code), and an
entry's header and SHA-256 only catch accidents: whoever can write the directory can plant one.
So, like ssh, pip and ccache, a cache directory is used only when it is owned by this user and
not writable by group or others. Directories are created 0o700 and files written 0o600; an unsafe
directory turns the on-disk cache off (compiles still work, from scratch) with one warning.

``HLORT_CACHE_DIR`` moves the root (default: the per-user cache directory of the OS, from
platformdirs: ``$XDG_CACHE_HOME/hlort`` or ``~/.cache/hlort`` on Linux, ``~/Library/Caches/hlort``
on macOS, ``%LOCALAPPDATA%\\hlort\\Cache`` on Windows), ``HLORT_CACHE=0`` turns every cache off,
``HLORT_CACHE_MAX_BYTES`` caps its size (least recently used entries are evicted:
hlort.plugin.base.cache_eviction). ``hlort cache info`` and ``hlort cache clear`` show and empty it.
"""

from __future__ import annotations

import itertools
import os
import stat
import threading

from hlort.log import lazy_logger
from hlort.plugin.base.cache_eviction import MARKER, note_written

LOGGER = lazy_logger("hlort.cache")
_verdicts: dict[str, bool] = {}  # directory -> safe to use (checked once per process)
_lock = threading.Lock()


def cache_enabled() -> bool:
    return os.environ.get("HLORT_CACHE", "1") != "0"


def cache_root() -> str:
    """The directory every hlort cache lives under (plugins add their own subdirectory)."""
    explicit = os.environ.get("HLORT_CACHE_DIR")
    if explicit:
        return explicit
    try:
        import platformdirs
    except ImportError:  # a dependency of hlort; without it, the XDG location (Linux's)
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "hlort")
    return platformdirs.user_cache_dir("hlort", appauthor=False)


def private_cache_dir(name: str) -> str | None:
    """``cache_root()/name``, created 0o700 if missing; None when the cache is off, cannot be
    created, or the root or this directory is not private to this user (warned once)."""
    if not cache_enabled():
        return None
    root = cache_root()
    directory = os.path.join(root, name)
    with _lock:
        if directory not in _verdicts:
            _verdicts[directory] = _make_private(root) and _make_private(directory)
            if _verdicts[directory]:
                _mark(directory)
        return directory if _verdicts[directory] else None


def _mark(directory: str) -> None:
    """The marker that makes ``directory`` one the size cap may evict from (cache_eviction)."""
    path = os.path.join(directory, MARKER)
    if not os.path.exists(path):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write("hlort cache directory: files here may be evicted or cleared\n")
        except OSError:
            pass  # another process made it, or a read-only place


def _make_private(directory: str) -> bool:
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        info = os.stat(directory)
    except OSError:
        return False  # a read-only or missing place only costs recompilation
    problem = None
    if not stat.S_ISDIR(info.st_mode):
        problem = "is not a directory"
    elif info.st_uid != os.getuid():
        problem = f"is owned by uid {info.st_uid}, not by this user (uid {os.getuid()})"
    elif info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        problem = f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    if problem is None:
        return True
    LOGGER.warning(
        "hlort cache directory %s %s; anyone who can write it could plant code this "
        "process runs, so the on-disk cache is off. Fix: chmod 700 it (or chown it), "
        "or point HLORT_CACHE_DIR at a private directory",
        directory,
        problem,
    )
    return False


def write_cache_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, readable only by this user (best effort)."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = _private_temporary(directory)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        return  # a read-only cache directory only costs recompilation
    note_written(cache_root(), len(data), path)  # over HLORT_CACHE_MAX_BYTES: evict LRU entries


_TEMP_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
_temp_names = itertools.count()


def _private_temporary(directory: str) -> tuple[int, str]:
    """A new file in ``directory`` as ``tempfile.mkstemp`` makes it (O_EXCL, mode 0o600, a name
    starting with ``tmp``, which eviction skips), without importing tempfile: that module
    brings shutil, lzma, bz2 and random, milliseconds of a process's first compile."""
    for _ in range(100):
        name = f"tmp{os.getpid()}-{next(_temp_names)}-{os.urandom(4).hex()}"
        path = os.path.join(directory, name)
        try:
            return os.open(path, _TEMP_FLAGS | getattr(os, "O_BINARY", 0), 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {directory}")


def forget_verdicts() -> None:
    """Check directories again on next use (tests that change a directory's mode)."""
    with _lock:
        _verdicts.clear()
