"""The runtime library the JIT links kernels against: compiler-rt's helpers, compiled once.

LLVM's code generator may call compiler-rt functions that the Python process does not have
(runtime_float_helpers.py, runtime_int128_helpers.py say which and why). The JIT compiles this
library into the process the first time an object refers to one of them (jit.py), so processes
whose kernels need none never pay for it.
"""

from __future__ import annotations

import re
from functools import cache

from hlort_cpu.codegen.runtime_float_helpers import float_helpers
from hlort_cpu.codegen.runtime_int128_helpers import int128_helpers

_ENTITY = re.compile(r"(?m)^(?=declare |define )")
_SYMBOL = re.compile(r"@([\w.$]+)\(")


@cache
def helper_names() -> frozenset[str]:
    """The symbols the runtime library defines."""
    return frozenset(float_helpers()) | frozenset(int128_helpers())


@cache
def library_ir() -> str:
    """One module with every helper (shared pieces such as the i128 division routine once)."""
    entities: dict[str, str] = {}
    for text in (*float_helpers().values(), *int128_helpers().values()):
        for entity in _ENTITY.split(text):
            match = _SYMBOL.search(entity)
            if match is not None:
                entities.setdefault(match.group(1), entity.strip() + "\n")
    return "; hlort runtime library (compiler-rt helpers)\n\n" + "\n".join(entities.values())
