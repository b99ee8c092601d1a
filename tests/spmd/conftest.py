"""Fixtures: interpreter backends with several devices (the oracle for partitioned programs)."""

from __future__ import annotations

import pytest

from hlort.plugin.interpreter_backend import InterpreterPlugin
from hlort.runtime.client import Backend


@pytest.fixture(scope="module")
def interpreter():
    """An interpreter backend with 8 devices, private to the test module."""
    plugin = InterpreterPlugin(device_count=8)
    backend = Backend(plugin.create_client({"device_count": 8}), plugin)
    yield backend
