"""The cpu plugin's object-code cache (machine code) is read only from a private directory."""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.plugin.base import cache_dir
from hlort_cpu import compile_cache


def _module():
    b = Builder("private_cpu")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.multiply(x, x))


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    cache_dir.forget_verdicts()
    compile_cache.clear_memory()
    yield monkeypatch
    cache_dir.forget_verdicts()
    compile_cache.clear_memory()


def _files(root) -> list[str]:
    return [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]


def test_object_code_in_a_group_writable_plugin_directory_is_never_read(fresh, tmp_path, caplog):
    root = tmp_path / "cache"
    fresh.setenv("HLORT_CACHE_DIR", str(root))
    hlort.compile(_module(), "cpu")
    assert _files(root / "cpu")  # stored while the directory was private
    os.chmod(root / "cpu", 0o775)
    cache_dir.forget_verdicts()
    compile_cache.clear_memory()
    loads = []
    real = compile_cache._decode
    fresh.setattr(compile_cache, "_decode", lambda *a: loads.append(a) or real(*a))
    fresh.setenv("HLORT_CACHE", "1")
    with caplog.at_level(logging.WARNING, logger="hlort.cache"):
        b = Builder("other_cpu")  # a new module: the executable cache has no entry for it
        x = b.parameter(shape.array("f32", [4]))
        exe = hlort.compile(b.build(b.multiply(x, x)), "cpu")
    assert loads == []  # no entry of the unsafe directory was even decoded
    np.testing.assert_array_equal(exe(np.arange(4, dtype=np.float32)), np.arange(4) ** 2)
    assert any(r.name == "hlort.cache" and "cpu" in r.getMessage() for r in caplog.records)
