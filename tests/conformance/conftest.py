"""Fixtures for tests of the conformance suite; the helpers live in suite_runner.py."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite_runner import SuiteRun, run_suite  # noqa: E402


@pytest.fixture
def suite(tmp_path):
    """``suite(platform, *pytest_args, fakes=..., env=...)`` -> SuiteRun."""

    def run(platform: str, *args: str, **kwargs) -> SuiteRun:
        return run_suite(platform, *args, tmp_path=tmp_path, **kwargs)

    return run
