"""pytest fixtures shared by tests/plugin, tests/runtime and tests/cli (imported by their conftest).

``fresh_registry`` (autouse there): each test starts with a new default registry that knows only
the built-in interpreter (installed plugins such as hlort-cpu would otherwise change the default
backend under the tests' feet) and without HLORT_PLATFORMS. Discovery of installed plugins is
tested in subprocesses with ``fake_site``: a directory that, on sys.path or PYTHONPATH, makes
the fake plugin distributions installed (see fake_site.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_site import HOSTILE, build_fake_site

from hlort.plugin.registry import Registry, reset_default_registry


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.delenv("HLORT_PLATFORMS", raising=False)
    registry = reset_default_registry(lambda: Registry(group=None))
    yield registry
    reset_default_registry()


@pytest.fixture(scope="session")
def fake_site(tmp_path_factory) -> Path:
    return build_fake_site(tmp_path_factory.mktemp("fake_site"))


@pytest.fixture(scope="session")
def hostile_site(tmp_path_factory) -> Path:
    return build_fake_site(tmp_path_factory.mktemp("hostile_site"), HOSTILE)
