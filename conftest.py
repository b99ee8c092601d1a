"""Repository-wide test setup: every cache hlort keeps goes to a fresh directory per session,
so tests never read entries left by earlier runs or fill the user's own cache."""

from __future__ import annotations

import os
import tempfile

if "HLORT_CACHE_DIR" not in os.environ:
    os.environ["HLORT_CACHE_DIR"] = tempfile.mkdtemp(prefix="hlort-test-cache-")
