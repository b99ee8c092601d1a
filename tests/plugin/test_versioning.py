"""The plugin API version rule: same major, minimum <= minor <= the core's; else a clear refusal."""

import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.plugin import versioning
from hlort.plugin.versioning import API_VERSION, check_api_version, is_compatible


def test_core_version_is_1_1():
    assert API_VERSION == (1, 1)


@pytest.mark.parametrize("declared", [(1, 0), (1, 1)])
def test_same_major_and_minor_the_core_implements_is_accepted(declared):
    assert is_compatible(declared)
    assert check_api_version(declared, "p") == declared


@pytest.mark.parametrize("declared", [(1, 2), (1, 9), (1, 99)])
def test_a_minor_newer_than_the_core_is_rejected_naming_the_upgrade(declared):
    """A 1.9 plugin may call methods a 1.1 core lacks: refused at load, not at first call."""
    assert not is_compatible(declared)
    with pytest.raises(HlortError) as info:
        check_api_version(declared, "acme")
    err = info.value
    assert err.code is ErrorCode.FAILED_PRECONDITION
    assert f"targets plugin API 1.{declared[1]}" in err.message
    assert "implements API 1.1" in err.message and "1.0 to 1.1" in err.message
    assert f"fix: upgrade hlort to a release implementing plugin API 1.{declared[1]}" in err.message


@pytest.mark.parametrize("declared", [(0, 9), (2, 0), (3, 1)])
def test_other_major_is_rejected_with_both_versions_and_the_fix(declared):
    with pytest.raises(HlortError) as info:
        check_api_version(declared, "tpusim")
    err = info.value
    assert err.code is ErrorCode.FAILED_PRECONDITION
    assert f"{declared[0]}.{declared[1]}" in err.message
    assert "1.0" in err.message and "'tpusim'" in err.message
    assert "fix:" in err.message
    if declared[0] > API_VERSION[0]:
        assert "upgrade hlort" in err.message
    else:
        assert "upgrade the plugin" in err.message


def test_minor_below_the_minimum_is_rejected(monkeypatch):
    monkeypatch.setattr(versioning, "API_VERSION", (1, 3))
    monkeypatch.setattr(versioning, "MIN_SUPPORTED_MINOR", 2)
    assert not is_compatible((1, 1))
    with pytest.raises(HlortError, match="targets plugin API 1.1.*upgrade the plugin.*1.2 to 1.3"):
        check_api_version((1, 1), "old")
    assert check_api_version((1, 2), "ok") == (1, 2)
    assert check_api_version((1, 3), "ok") == (1, 3)


@pytest.mark.parametrize("declared", [None, "1.0", (1,), (1, 0, 0), (1.0, 0), (-1, 0), (True, 0)])
def test_malformed_declarations_are_rejected(declared):
    with pytest.raises(HlortError, match="api_version"):
        check_api_version(declared, "p")
