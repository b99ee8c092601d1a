"""Repository-wide test setup.

Every cache hlort keeps goes to a fresh directory per session, so tests never read entries left
by earlier runs or fill the user's own cache. Programs are expected to compile natively:
``HLORT_FALLBACK=error`` makes any instruction a backend would run on the reference interpreter
fail its test (a test that exercises a fallback on purpose sets ``allow`` itself, e.g. with the
``allow_fallback`` fixture).
"""

from __future__ import annotations

import os
import tempfile

import pytest

if "HLORT_CACHE_DIR" not in os.environ:
    os.environ["HLORT_CACHE_DIR"] = tempfile.mkdtemp(prefix="hlort-test-cache-")
os.environ.setdefault("HLORT_FALLBACK", "error")


@pytest.fixture
def allow_fallback(monkeypatch):
    """Let this test's programs run instructions on the reference interpreter."""
    monkeypatch.setenv("HLORT_FALLBACK", "allow")
