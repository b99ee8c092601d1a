"""Regular expressions compiled on first use.

Compiling the text package's patterns costs about 5 ms, which a process pays on import. The
warm-cache path (print a module for its fingerprint, load an executable) parses nothing, so the
patterns wait until a parser first needs one.
"""

from __future__ import annotations

import re

_METHODS = ("match", "fullmatch", "search", "finditer", "findall", "sub", "split")


class LazyPattern:
    """Behaves as ``re.compile(pattern, flags)``; ``pattern`` is readable without compiling."""

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str):
        # First use: compile, then bind the compiled methods on the instance so later calls
        # go straight to them (no __getattr__ on the parser's hot paths).
        if name.startswith("__") or name in ("pattern", "flags"):
            raise AttributeError(name)  # copy/pickle probe an instance before __init__ ran
        compiled = re.compile(self.pattern, self.flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)
