"""The conformance suite: a pytest plugin any backend plugin runs against itself."""
