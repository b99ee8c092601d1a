"""pytest fixtures shared by tests/plugin, tests/runtime and tests/cli (imported by their conftest).

``fresh_registry`` (autouse there): each test starts with a new default registry that knows only
the built-in interpreter (installed plugins such as hlort-cpu would otherwise change the default
backend under the tests' feet) and without HLORT_PLATFORMS. The test's registry is closed after
it and the process's own one put back untouched: closing that one would close clients others
still hold (JAX's hlort_* backends, started by an earlier test, failed every later JAX test with
"work queue cpu:0 is closed" when jax was installed). Discovery of installed plugins is
tested in subprocesses with ``fake_site``: a directory that, on sys.path or PYTHONPATH, makes
the fake plugin distributions installed (see fake_site.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_site import HOSTILE, build_fake_site

import hlort.plugin.registry as registry_module
from hlort.plugin.registry import Registry


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.delenv("HLORT_PLATFORMS", raising=False)
    registry = Registry(group=None)
    monkeypatch.setattr(registry_module, "_default", registry)  # undone after the close below
    yield registry
    registry.close()


@pytest.fixture(scope="session")
def fake_site(tmp_path_factory) -> Path:
    return build_fake_site(tmp_path_factory.mktemp("fake_site"))


@pytest.fixture(scope="session")
def hostile_site(tmp_path_factory) -> Path:
    return build_fake_site(tmp_path_factory.mktemp("hostile_site"), HOSTILE)
