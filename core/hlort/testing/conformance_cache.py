"""A conformance run compiles into a cache of its own, never the user's.

The suite compiles hundreds of programs; in the user's cache (``HLORT_CACHE_DIR`` or the OS's
per-user cache directory) they would crowd out the user's own entries under
``HLORT_CACHE_MAX_BYTES``. So a run with ``--hlort-platform`` points ``HLORT_CACHE_DIR`` at a
fresh private directory, deleted when the run ends (the suite's own tests of caching still see
a cache: that one). ``HLORT_CONFORMANCE_CACHE_DIR=DIR`` keeps one across runs instead, to test
executables loaded from a warm cache (a second run on the same DIR).
"""

from __future__ import annotations

import os
import shutil
import tempfile

ENV_VAR = "HLORT_CONFORMANCE_CACHE_DIR"


def use_own_cache(config) -> str:
    """Point HLORT_CACHE_DIR at the run's cache until ``config``'s cleanup; the directory."""
    previous = os.environ.get("HLORT_CACHE_DIR")
    kept = os.environ.get(ENV_VAR)
    directory = kept or tempfile.mkdtemp(prefix="hlort-conformance-cache-")  # 0o700
    os.environ["HLORT_CACHE_DIR"] = directory

    def restore() -> None:
        if previous is None:
            os.environ.pop("HLORT_CACHE_DIR", None)
        else:
            os.environ["HLORT_CACHE_DIR"] = previous
        if not kept:
            shutil.rmtree(directory, ignore_errors=True)

    config.add_cleanup(restore)
    return directory
