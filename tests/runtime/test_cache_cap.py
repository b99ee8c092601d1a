"""The compile cache's size cap (LRU), ``hlort cache info|clear``, its per-OS location, a
conformance run's own cache, and cached executables that describe themselves as fresh ones do."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort.cli import main
from hlort.errors import ErrorCode, HlortError
from hlort.plugin.base import cache_eviction
from hlort.plugin.base.cache_dir import cache_root, private_cache_dir, write_cache_file
from hlort.plugin.registry import register_plugin
from hlort.testing.conformance_cache import use_own_cache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    monkeypatch.setenv("HLORT_CACHE_DIR", str(root))
    monkeypatch.delenv("HLORT_CACHE", raising=False)
    monkeypatch.delenv("HLORT_CACHE_MAX_BYTES", raising=False)
    cache_eviction.forget_usage()
    yield root
    cache_eviction.forget_usage()


def _module(scale: float):
    b = Builder(f"scaled_{int(scale)}")
    x = b.parameter(shape.array("f32", [4]))
    return b.build(b.multiply(x, b.broadcast(b.constant(np.float32(scale)), [4], [])))


@pytest.mark.parametrize(
    "value, expected",
    [("", 1 << 30), ("4096", 4096), ("512M", 512 << 20), ("2g", 2 << 30), ("8KiB", 8192)],
)
def test_the_cap_reads_sizes(monkeypatch, value, expected):
    monkeypatch.setenv("HLORT_CACHE_MAX_BYTES", value)
    assert cache_eviction.max_bytes() == expected


def test_a_bad_cap_is_invalid_argument_naming_the_forms(monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_MAX_BYTES", "lots")
    with pytest.raises(HlortError) as err:
        cache_eviction.max_bytes()
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "512M" in err.value.message


def test_writes_past_the_cap_evict_the_least_recently_used(cache, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE_MAX_BYTES", "3000")
    assert private_cache_dir("x") == str(cache / "x")  # marks it as a cache directory
    paths = [str(cache / "x" / "ab" / f"entry{i}") for i in range(3)]
    for i, path in enumerate(paths):
        write_cache_file(path, b"\0" * 1000)
        os.utime(path, (1000 + i, 1000 + i))  # written in order 0, 1, 2
    cache_eviction.mark_used(paths[0])  # a hit: 0 is now the most recently used
    write_cache_file(str(cache / "x" / "cd" / "entry3"), b"\0" * 1000)  # 4000 > 3000
    left = sorted(os.path.basename(e.path) for e in cache_eviction.entries(str(cache)))
    assert left == ["entry0", "entry2", "entry3"]  # entry1, used longest ago, went


def test_cache_files_are_written_whole_private_and_leave_no_temporaries(cache):
    directory = private_cache_dir("cpu")
    for i in range(3):  # rewriting one entry, and others beside it
        write_cache_file(os.path.join(directory, "entry"), b"x" * (i + 1))
        write_cache_file(os.path.join(directory, f"other{i}"), b"y")
    assert open(os.path.join(directory, "entry"), "rb").read() == b"xxx"
    assert stat.S_IMODE(os.stat(os.path.join(directory, "entry")).st_mode) & 0o077 == 0
    assert not [n for n in os.listdir(directory) if n.startswith("tmp")]


def test_files_outside_hlort_cache_directories_are_never_evicted_or_cleared(cache, monkeypatch):
    # HLORT_CACHE_DIR pointed at a directory that holds other things (a home, a project)
    monkeypatch.setenv("HLORT_CACHE_MAX_BYTES", "1000")
    (cache / "notes.txt").write_bytes(b"\0" * 5000)
    (cache / "project").mkdir()
    (cache / "project" / "data.bin").write_bytes(b"\0" * 5000)
    assert private_cache_dir("x") == str(cache / "x")
    write_cache_file(str(cache / "x" / "entry"), b"\0" * 2000)  # over the cap: evicts its own
    assert [os.path.basename(e.path) for e in cache_eviction.entries(str(cache))] == []
    cache_eviction.clear(str(cache))
    assert (cache / "notes.txt").stat().st_size == 5000
    assert (cache / "project" / "data.bin").stat().st_size == 5000
    assert (cache / "x" / cache_eviction.MARKER).exists()


def test_the_compile_cache_stays_under_its_cap(cache, monkeypatch, caplog):
    hlort.compile(_module(2), "interpreter")
    one_entry = sum(e.size for e in cache_eviction.entries(str(cache)))
    monkeypatch.setenv("HLORT_CACHE_MAX_BYTES", str(int(one_entry * 1.5)))
    with caplog.at_level("INFO", logger="hlort"):
        hlort.compile(_module(3), "interpreter")
    assert sum(e.size for e in cache_eviction.entries(str(cache))) <= one_entry * 1.5
    assert any("evicted 1 least recently used entry" in r.getMessage() for r in caplog.records)
    exe = hlort.compile(_module(3), "interpreter")
    assert "cache_load" in exe.timings  # the newer one stayed
    assert "cache_load" not in hlort.compile(_module(2), "interpreter").timings


def test_cache_info_and_clear(cache, capsys):
    hlort.compile(_module(5), "interpreter")
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["root"] == str(cache) and info["root_from"] == "HLORT_CACHE_DIR"
    assert info["caches"]["executables"]["entries"] == 1 and info["bytes"] > 0
    assert main(["cache", "info"]) == 0
    assert "executables" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert cache_eviction.entries(str(cache)) == []
    assert main(["cache", "frobnicate"]) == 2


def test_the_default_location_is_the_os_cache_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("HLORT_CACHE_DIR", raising=False)
    if sys.platform.startswith("linux"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert cache_root() == str(tmp_path / "hlort")
    platformdirs = pytest.importorskip("platformdirs")
    assert cache_root() == platformdirs.user_cache_dir("hlort", appauthor=False)


class _Config:
    def __init__(self):
        self.cleanups = []

    def add_cleanup(self, fn):
        self.cleanups.append(fn)


def test_a_conformance_run_uses_a_cache_of_its_own(cache, monkeypatch):
    monkeypatch.delenv("HLORT_CONFORMANCE_CACHE_DIR", raising=False)
    config = _Config()
    own = use_own_cache(config)
    assert os.environ["HLORT_CACHE_DIR"] == own != str(cache)
    assert oct(os.stat(own).st_mode & 0o777) == "0o700"
    config.cleanups[0]()
    assert os.environ["HLORT_CACHE_DIR"] == str(cache) and not os.path.exists(own)


def _suite(env, test: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "hlort.testing", "--hlort-platform"]
    cmd += ["interpreter", "-k", test, "-c", os.devnull, "--noconftest", "-q"]
    cmd += ["-p", "no:cacheprovider", "-p", "no:hypothesispytest"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_the_suite_leaves_the_users_cache_alone_and_passes_on_a_warm_one(cache, tmp_path):
    env = dict(os.environ, HLORT_CACHE_DIR=str(cache))
    run = _suite(env, "test_executable_describes_itself or test_fingerprint_is_stable")
    assert run.returncode == 0, run.stdout[-2000:]
    assert cache_eviction.entries(str(cache)) == [], "nothing in the user's cache"
    env["HLORT_CONFORMANCE_CACHE_DIR"] = str(tmp_path / "kept")
    for _ in range(2):  # the second run loads every executable from the kept cache
        run = _suite(env, "test_executable_describes_itself")
        assert run.returncode == 0, run.stdout[-2000:]
    assert cache_eviction.entries(str(tmp_path / "kept"))


def _description(exe) -> dict:
    raw = exe.raw
    return {
        "name": raw.name,
        "inputs": [s.to_hlo() for s in raw.parameter_shapes],
        "outputs": [s.to_hlo() for s in raw.output_shapes],
        "str": [str(s) for s in (*raw.parameter_shapes, *raw.output_shapes)],
        "text": exe.as_text(),
        "fingerprint": raw.fingerprint(),
    }


@pytest.mark.parametrize("platform", ["interpreter", "cpu", "tpusim"])
def test_cached_and_fresh_executables_describe_themselves_identically(cache, platform):
    from hlort.testing.programs import two_outputs

    if platform == "cpu":
        pytest.importorskip("llvmlite")
        register_plugin(pytest.importorskip("hlort_cpu.plugin").CpuPlugin())
    elif platform == "tpusim":
        register_plugin(pytest.importorskip("hlort_tpusim.plugin").TpuSimPlugin())
    fresh = hlort.compile(two_outputs(4), platform)
    cached = hlort.compile(two_outputs(4), platform)
    assert "cache_load" in cached.timings and "cache_load" not in fresh.timings
    assert _description(cached) == _description(fresh)
    assert _description(cached)["str"] == ["f32[4]", "s32[4]", "f32[4]", "s32[4]", "f32[4]"]
