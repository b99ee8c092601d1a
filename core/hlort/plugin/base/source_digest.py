"""A digest of Python sources, for cache keys that must change when the code does.

Path, size and modification time of every ``.py`` file (not its bytes): a process computes it
once, and reading the sources would cost milliseconds on the warm-cache path. Any edit rewrites
its file and so changes the mtime; a different install (a new venv, a Nix store path) changes
the paths. What it cannot see is a same-size edit whose mtime was set back, at the same path.
"""

from __future__ import annotations

import os

from hlort.sha256 import sha256
from hlort.version import __version__

_core_digest: str | None = None
# what an optimized module is made of and by: its IR and text (a cached module is encoded from
# these), the passes, and what they call (constant folding evaluates with the interpreter)
CORE_DIGEST_PARTS = (
    "passes",
    "ir",
    "text",
    "interpreter",
    "builder.py",
    "shape.py",
    "dtypes.py",
)


def source_digest(*paths: str, salt: str = "") -> str:
    """SHA-256 over (path, size, mtime) of the ``.py`` files at or under ``paths``."""
    h = sha256(salt.encode())
    for root in paths:
        root = os.path.realpath(root)
        if os.path.isfile(root):
            _add(h, root, os.stat(root))
            continue
        pending = [root]
        while pending:
            directory = pending.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                h.update(f"{directory}:?;".encode())
                continue
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    _add(h, entry.path, entry.stat())
    return h.hexdigest()


def _add(h, path: str, st: os.stat_result) -> None:
    h.update(f"{path}:{st.st_size}:{st.st_mtime_ns};".encode())


def core_source_digest() -> str:
    """Size and mtime of the core files that shape an optimized module (computed once): part of
    the key of every cache that stores optimized modules (the runtime's and a plugin's)."""
    global _core_digest
    if _core_digest is None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        _core_digest = source_digest(
            *(os.path.join(root, part) for part in CORE_DIGEST_PARTS), salt=__version__
        )
    return _core_digest
