"""Makes this directory's helper modules importable (tests use --import-mode=importlib), and
gives every test module a compile cache of its own (cache hits never leak between modules)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HLORT_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield
