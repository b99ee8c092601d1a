"""A plugin whose dependency is not installed: its import raises ModuleNotFoundError."""

import hlort_fake_absent_runtime.bindings  # noqa: F401 - never installed anywhere
