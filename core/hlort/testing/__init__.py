"""The conformance suite: a pytest plugin any backend plugin runs against itself.

``pytest --pyargs hlort.testing --hlort-platform NAME`` (or ``hlort conformance --platform
NAME``); see docs/conformance.md. Only the profile types are imported here, so a plugin can
declare its profile without loading the suite.
"""

from hlort.testing.profile import FEATURES, ConformanceProfile, Tolerance  # noqa: F401
