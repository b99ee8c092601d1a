"""The cache directories' usage records: a process's first cache write reads them instead of
statting every entry, and still evicts what a scan would (cache_eviction.py)."""

from __future__ import annotations

import os
import time

import pytest

from hlort.plugin.base import cache_eviction
from hlort.plugin.base.cache_dir import private_cache_dir, write_cache_file


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


@pytest.fixture
def scans(monkeypatch):
    """The directories a scan counted file by file, in order."""
    seen: list[str] = []
    real = cache_eviction._files_under

    def counting(top):
        seen.append(os.path.basename(top))
        return real(top)

    monkeypatch.setattr(cache_eviction, "_files_under", counting)
    return seen


def _record(directory) -> tuple[int, float]:
    size, scanned = open(cache_eviction._usage_path(directory)).read().split()
    return int(size), float(scanned)


def _write(directory, name, size):
    write_cache_file(os.path.join(directory, name[:2], name), b"\0" * size)


def test_a_new_process_reads_the_records_and_scans_nothing(cache, scans):
    a, b = private_cache_dir("a"), private_cache_dir("b")
    _write(a, "a1", 1000)  # the first write of this "process" scans both directories
    assert sorted(scans) == ["a", "b"] and _record(a)[0] == 1000 and _record(b)[0] == 0
    _write(b, "b1", 300)
    _write(a, "a2", 200)
    assert _record(a)[0] == 1200 and _record(b)[0] == 300  # each write adds to its record
    scans.clear()
    cache_eviction.forget_usage()  # a fresh process
    _write(b, "b2", 50)
    assert scans == [] and cache_eviction._usage[str(cache)] == 1550
    assert _record(b)[0] == 350
    # the records stay out of every cache directory (and so out of entries, info and clear)
    assert sorted(os.listdir(cache / cache_eviction.USAGE)) == ["a", "b"]
    assert sorted(os.path.basename(e.path) for e in cache_eviction.entries(str(cache))) == [
        "a1",
        "a2",
        "b1",
        "b2",
    ]


def test_a_stale_damaged_or_missing_record_is_rescanned(cache, scans):
    a = private_cache_dir("a")
    _write(a, "a1", 1000)
    path = cache_eviction._usage_path(a)
    old = time.time() - cache_eviction.USAGE_MAX_AGE_S - 60
    for content in (f"1000 {old!r}\n", "lots of bytes\n", f"-5 {time.time()!r}\n", None):
        if content is None:
            os.remove(path)
        else:
            with open(path, "w") as f:
                f.write(content)
        scans.clear()
        cache_eviction.forget_usage()
        _write(a, "a2", 10)
        assert scans == ["a"], content
        assert cache_eviction._usage[str(cache)] == 1010 and _record(a)[0] == 1010


def test_eviction_trusts_no_record_and_rewrites_them(cache, monkeypatch):
    a = private_cache_dir("a")
    _write(a, "a1", 1000)
    os.utime(os.path.join(a, "a1", "a1"), (1000, 1000))  # used longest ago
    cache_eviction.forget_usage()
    with open(cache_eviction._usage_path(a), "w") as f:  # a record far too low
        f.write(f"10 {time.time()!r}\n")
    monkeypatch.setenv("HLORT_CACHE_MAX_BYTES", "1600")
    _write(a, "a2", 600)  # 10 + 600 by the record: under the cap, nothing evicted yet
    assert len(cache_eviction.entries(str(cache))) == 2
    _write(a, "a3", 1000)  # 1610 > 1600: the scan finds 2600 and evicts the oldest
    left = sorted(os.path.basename(e.path) for e in cache_eviction.entries(str(cache)))
    assert left == ["a2", "a3"] and _record(a)[0] == 1600
    assert cache_eviction._usage[str(cache)] == 1600


def test_clear_drops_the_records(cache, scans):
    a = private_cache_dir("a")
    _write(a, "a1", 100)
    assert cache_eviction.clear(str(cache)) == (1, 100)
    assert not os.path.exists(cache_eviction._usage_path(a))
    scans.clear()
    _write(a, "a2", 7)  # the next write counts from a scan again
    assert scans == ["a"] and _record(a)[0] == 7


def test_a_record_is_rewritten_in_place_not_renamed_over(cache, monkeypatch):
    """ext4 writes a renamed-over file's replacement out first (auto_da_alloc, milliseconds a
    cache write): the record's file keeps its inode, and an older, longer record is cut."""
    a = private_cache_dir("a")
    _write(a, "a1", 1000)
    path = cache_eviction._usage_path(a)
    with open(path, "w") as f:  # an older hlort's record, longer than the fixed width
        f.write(f"1000 {time.time()!r}" + " " * 200 + "\n")
    inode = os.stat(path).st_ino
    renamed: list[str] = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda s, d: (renamed.append(d), real_replace(s, d)))
    cache_eviction._add_usage(a, 250)
    assert os.stat(path).st_ino == inode and path not in renamed
    assert _record(a)[0] == 1250
    assert os.path.getsize(path) == cache_eviction._RECORD_WIDTH
