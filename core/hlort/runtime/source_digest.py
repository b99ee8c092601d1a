"""A digest of Python source trees, for cache keys that must change when the code does.

Size and modification time of every ``.py`` file (not its bytes): a process computes it once,
and reading the sources would cost milliseconds on the warm-cache path. Any edit rewrites the
file and so changes its mtime.
"""

from __future__ import annotations

import hashlib
import os


def source_digest(*directories: str, salt: str = "") -> str:
    """SHA-256 over (relative path, size, mtime) of the ``.py`` files under ``directories``."""
    h = hashlib.sha256(salt.encode())
    for root in directories:
        pending = [root]
        while pending:
            directory = pending.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                h.update(f"{directory}:?;".encode())
                continue
            for entry in entries:
                if entry.is_dir():
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    rel = entry.path[len(root) :]
                    h.update(f"{rel}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()
