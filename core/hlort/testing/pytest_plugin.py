"""pytest11 entry point of the conformance suite (options and fixtures)."""
