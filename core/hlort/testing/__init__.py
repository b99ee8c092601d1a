"""The conformance suite: a pytest plugin any backend plugin runs against itself.

``pytest --pyargs hlort.testing --hlort-platform NAME`` (or ``hlort conformance --platform
NAME``); see docs/conformance.md. A plugin declares its profile with
:mod:`hlort.plugin.conformance_profile`, without loading the suite.
"""
