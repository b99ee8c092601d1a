"""Finding ld.lld / llvm-readelf of a recent enough release, and what is said when there is
none. Fake tools (shell scripts printing a version) stand in for installed ones."""

import os
import stat

import pytest

from hlort.errors import ErrorCode, HlortError
from hlort_rocm import llvm_tools
from hlort_rocm.lld_linker import find_linker


def fake_tool(directory, name, banner):
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{banner}'\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def only_fakes(tmp_path, monkeypatch):
    """PATH, the distribution prefix and ROCM_PATH all point at empty folders of tmp_path."""
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.setenv("ROCM_PATH", str(tmp_path / "rocm"))
    monkeypatch.delenv("HLORT_ROCM_LLD", raising=False)
    monkeypatch.setattr(llvm_tools, "DISTRIBUTION_PREFIX", str(tmp_path / "lib"))
    llvm_tools.tool_major.cache_clear()
    yield tmp_path / "bin"
    llvm_tools.tool_major.cache_clear()


def test_no_linker_is_unavailable_naming_the_package(only_fakes):
    with pytest.raises(HlortError) as info:
        find_linker(5)
    assert info.value.code is ErrorCode.UNAVAILABLE
    assert "apt-get install lld-19" in info.value.message and "HLORT_ROCM_LLD" in info.value.message


def test_the_newest_linker_that_links_the_version_is_chosen(only_fakes):
    old = fake_tool(only_fakes, "ld.lld", "Debian LLD 14.0.6 (compatible with GNU linkers)")
    new = fake_tool(only_fakes, "ld.lld-16", "Debian LLD 16.0.6 (compatible with GNU linkers)")
    assert find_linker(4).path == new  # versioned names first
    assert find_linker(5).path == new
    with pytest.raises(HlortError) as info:
        find_linker(6)  # v6 needs lld 19
    message = info.value.message
    assert info.value.code is ErrorCode.UNAVAILABLE and ">= 19" in message
    assert f"{old} (release 14)" in message and f"{new} (release 16)" in message


def test_an_explicit_linker_must_be_new_enough(only_fakes, monkeypatch):
    monkeypatch.setenv("HLORT_ROCM_LLD", fake_tool(only_fakes, "my-lld", "LLD 14.0.0"))
    assert find_linker(4).major == 14
    with pytest.raises(HlortError) as info:
        find_linker(5)
    assert info.value.code is ErrorCode.UNAVAILABLE and "is release 14" in info.value.message
    monkeypatch.setenv("HLORT_ROCM_LLD", os.devnull)
    with pytest.raises(HlortError) as info:
        find_linker(4)
    assert "does not run" in info.value.message
