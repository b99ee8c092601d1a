"""Shared fixtures (fresh_registry, fake_site) live in tests/fake_plugin/registry_fixtures.py."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fake_plugin"))

from registry_fixtures import fake_site, fresh_registry, hostile_site  # noqa: E402, F401
