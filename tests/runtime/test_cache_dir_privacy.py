"""The on-disk caches are used only in a directory private to this user (they hold code)."""

from __future__ import annotations

import logging
import os
import stat

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.plugin.base import cache_dir


def _module():
    b = Builder("private")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.add(x, x))


def _files(root) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    cache_dir.forget_verdicts()
    yield monkeypatch
    cache_dir.forget_verdicts()


def test_a_new_cache_is_created_private(fresh, tmp_path):
    root = tmp_path / "new" / "hlort"
    fresh.setenv("HLORT_CACHE_DIR", str(root))
    hlort.compile(_module(), "interpreter")
    assert cache_dir.private_cache_dir("plugin") == str(root / "plugin")
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    for sub in ("executables", "plugin"):
        assert stat.S_IMODE(os.stat(root / sub).st_mode) == 0o700
    files = _files(root)
    assert files and all(stat.S_IMODE(os.stat(f).st_mode) == 0o600 for f in files)
    assert "cache_load" in hlort.compile(_module(), "interpreter").timings


def test_the_off_switch_needs_no_directory(fresh, tmp_path):
    fresh.setenv("HLORT_CACHE_DIR", str(tmp_path / "never"))
    fresh.setenv("HLORT_CACHE", "0")
    assert cache_dir.private_cache_dir("executables") is None
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("unsafe", ["world-writable", "other owner", "subdirectory writable"])
def test_an_unsafe_cache_directory_is_not_used(fresh, tmp_path, caplog, unsafe):
    root = tmp_path / "shared"
    root.mkdir(mode=0o700)
    if unsafe == "world-writable":
        os.chmod(root, 0o777)
    elif unsafe == "other owner":
        fresh.setattr(os, "getuid", lambda: os.stat(root).st_uid + 1)
    else:
        (root / "executables").mkdir(mode=0o700)
        os.chmod(root / "executables", 0o770)
    fresh.setenv("HLORT_CACHE_DIR", str(root))
    with caplog.at_level(logging.WARNING, logger="hlort.cache"):
        x = np.arange(4, dtype=np.float32)
        np.testing.assert_array_equal(hlort.compile(_module(), "interpreter")(x), x + x)
        again = hlort.compile(_module(), "interpreter")
    assert "cache_load" not in again.timings
    if unsafe == "plugin dir writable":  # the executables directory itself is fine
        assert _files(root / "interpreter") == [] and _files(root / "executables")
    else:
        assert _files(root) == []
    warnings = [r for r in caplog.records if r.name == "hlort.cache"]
    assert len(warnings) == 1 and "HLORT_CACHE_DIR" in warnings[0].getMessage()
