"""The persistent executable cache: a hit skips verification and passes; bad entries recompile."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hlort
import hlort.runtime.compile as compile_module
from hlort import Builder, shape
from hlort.plugin.base import cache_eviction
from hlort.runtime.executable_cache import ExecutableCache


def _module(scale: float = 3.0):
    b = Builder("cached")
    x = b.parameter(shape.array("f32", [4]))
    k = b.broadcast(b.constant(np.float32(scale)), [4], [])
    return b.build(b.add(b.multiply(x, k), x))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    return tmp_path


@pytest.fixture
def counted(monkeypatch):
    counts = {"verify": 0}
    real = compile_module.verify_module

    def verify(module):
        counts["verify"] += 1
        real(module)

    monkeypatch.setattr(compile_module, "verify_module", verify)
    return counts


def _entries(root) -> list[str]:
    return [
        os.path.join(d, f)
        for d, _, fs in os.walk(os.path.join(root, "executables"))
        for f in fs
        if f != cache_eviction.MARKER
    ]


def test_second_compile_loads_without_verify_or_passes(cache_dir, counted):
    x = np.arange(4, dtype=np.float32)
    first = hlort.compile(_module(), "interpreter")
    assert counted["verify"] == 1 and len(_entries(cache_dir)) == 1
    second = hlort.compile(_module(), "interpreter")
    assert counted["verify"] == 1  # not verified again
    assert "cache_load" in second.timings and "core_passes" not in second.timings
    np.testing.assert_array_equal(second(x), first(x))
    assert second.as_text() == first.as_text()  # the optimized module comes back too


def test_key_depends_on_module_and_options(cache_dir):
    hlort.compile(_module(3.0), "interpreter")
    other = hlort.compile(_module(4.0), "interpreter")
    assert "cache_load" not in other.timings
    donated = hlort.compile(_module(3.0), "interpreter", options={"donated_arguments": (0,)})
    assert "cache_load" not in donated.timings
    assert len(_entries(cache_dir)) == 3


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_damaged_entry_is_deleted_and_recompiled(cache_dir, counted, damage):
    hlort.compile(_module(), "interpreter")
    (path,) = _entries(cache_dir)
    data = open(path, "rb").read()
    if damage == "truncate":
        data = data[: len(data) // 2]
    elif damage == "flip":
        data = data[:-5] + bytes([data[-5] ^ 0x40]) + data[-4:]
    else:
        data = b"not an executable"
    open(path, "wb").write(data)
    again = hlort.compile(_module(), "interpreter")
    assert counted["verify"] == 2 and "cache_load" not in again.timings
    np.testing.assert_array_equal(again(np.ones(4, np.float32)), np.full(4, 4, np.float32))
    assert open(path, "rb").read() != data  # rewritten by the fresh compile


def test_off_switch_and_dumps_bypass_the_cache(cache_dir, tmp_path, monkeypatch):
    hlort.compile(_module(), "interpreter", options={"debug": {"dump_dir": str(tmp_path / "d")}})
    assert _entries(cache_dir) == []
    monkeypatch.setenv("HLORT_CACHE", "0")
    hlort.compile(_module(), "interpreter")
    assert _entries(cache_dir) == []
    assert (
        ExecutableCache.for_compile(
            hlort.backend("interpreter"), _module(), compile_module.CompileOptions()
        )
        is None
    )


def test_a_second_process_loads_from_the_cache(cache_dir):
    """The point of the cache: a new process gets the compiled module without compiling it."""
    script = textwrap.dedent("""
        import sys, numpy as np, hlort
        sys.path.insert(0, sys.argv[1])
        from test_executable_cache import _module
        exe = hlort.compile(_module(), "interpreter")
        print("hit" if "cache_load" in exe.timings else "miss", exe(np.ones(4, np.float32))[0])
    """)
    here = os.path.dirname(__file__)
    env = dict(os.environ, HLORT_CACHE_DIR=str(cache_dir))
    outs = [
        subprocess.run(
            [sys.executable, "-c", script, here],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    assert outs == [["miss", "4.0"], ["hit", "4.0"]]
