"""Whether ``hlort conformance`` shows a progress bar: when stderr is a terminal and tqdm is
installed (hlort.testing.progress_bar), the pytest it runs gets ``--hlort-progress``, and
``HLORT_PROGRESS=1`` (pytest captures the child's stderr, so it cannot tell by itself)."""

from __future__ import annotations

import os
import sys


def _wanted() -> bool:
    from hlort.testing.progress_bar import bar_wanted

    return bar_wanted(sys.stderr)


def conformance_progress_args() -> list[str]:
    return ["--hlort-progress", "-q"] if _wanted() else []  # -q: no per-file lines either


def conformance_env() -> dict:
    """``subprocess.call`` keyword arguments: the environment with HLORT_PROGRESS=1 when the
    bar is wanted, else nothing (the child inherits this process's)."""
    if not _wanted():
        return {}
    return {"env": dict(os.environ, HLORT_PROGRESS="1")}
