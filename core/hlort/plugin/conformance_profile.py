"""ConformanceProfile: what a plugin tells the conformance suite about itself.

A plugin returns one from ``Plugin.conformance_profile()``. It is plain data, so it reads like a
checklist: what the backend does not support (those tests are skipped, with the reason), which
tests are known to fail (marked xfail; ``--hlort-strict`` turns an unexpected pass into a
failure), and where float results may be looser than the suite's defaults.

Keys are patterns where ``*`` matches any run of characters and ``?`` one character (nothing
else is special, so ``[`` in a test id means itself; matching is case-sensitive):

``unsupported``
    ``op:NAME`` (an HLO opcode, e.g. ``op:fft``), ``op:NAME:DTYPE`` (``op:dot:f8e5m2``),
    ``dtype:DTYPE`` (every test of that element type) or ``feature:NAME`` (see
    :data:`FEATURES`).
``expected_failures``
    a test id, as pytest prints it after ``::`` (``test_op[dot-bf16-matmul]``) or the whole
    node id; ``test_op[cholesky-*]`` matches every cholesky case.
``tolerances``
    ``OP:DTYPE``, ``OP`` or ``*:DTYPE`` (DTYPE is the op's input element type), mapped to a
    :class:`Tolerance`; the most specific key wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from functools import lru_cache

from hlort.lazy_dataclass import dataclass

FEATURES: dict[str, str] = {
    "copy_to_device": "Buffer.copy_to_device between two devices of the client",
    "serialization": "Executable.serialize and Client.deserialize_executable",
    "donation": "CompileOptions.donated_arguments (buffers consumed by execute)",
    "multi_device": "executing on a device other than device 0",
    "concurrent_execute": "several threads calling execute at once",
    "memory_stats": "Device.memory_stats",
    "cost_analysis": "Executable.cost_analysis",
    "compiled_memory_stats": "Executable.compiled_memory_stats",
    "runtime_errors": "an execution failing at run time (reported through events)",
}
"""Feature names a profile may declare unsupported (``feature:NAME``)."""


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    body = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.compile(body + r"\Z", re.DOTALL)


def matches(text: str, pattern: str) -> bool:
    """Whether ``text`` matches ``pattern`` (``*`` and ``?`` are the only wildcards)."""
    return _compiled(pattern).match(text) is not None


@dataclass(frozen=True)
class Tolerance:
    """How close a float (or complex) result must be to the reference interpreter's.

    A value passes when it is within ``ulp`` units in the last place of the expected value, or
    within ``atol + rtol * |expected|``. NaN must meet NaN and infinities must match exactly
    whatever the tolerance. ``Tolerance()`` (all zero) means exact.
    """

    ulp: int = 0
    rtol: float = 0.0
    atol: float = 0.0

    def __post_init__(self) -> None:
        if self.ulp < 0 or self.rtol < 0 or self.atol < 0:
            raise ValueError(f"tolerances must not be negative: {self}")

    def describe(self) -> str:
        parts = []
        if self.ulp:
            parts.append(f"{self.ulp} ulp")
        if self.rtol or self.atol:
            parts.append(f"rtol={self.rtol:g} atol={self.atol:g}")
        return " or ".join(parts) or "exact"


@dataclass(frozen=True)
class ConformanceProfile:
    """Unsupported features, expected failures and looser tolerances; empty by default."""

    unsupported: Mapping[str, str] = field(default_factory=dict)
    expected_failures: Mapping[str, str] = field(default_factory=dict)
    tolerances: Mapping[str, Tolerance] = field(default_factory=dict)

    def unsupported_reason(self, *keys: str) -> str | None:
        """The declared reason if any of ``keys`` (e.g. ``op:dot``) matches an entry."""
        for pattern, reason in self.unsupported.items():
            if any(matches(key, pattern) for key in keys):
                return f"declared unsupported ({pattern}): {reason}"
        return None

    def feature_reason(self, feature: str) -> str | None:
        return self.unsupported_reason(f"feature:{feature}")

    def expected_failure(self, nodeid: str) -> str | None:
        """The reason if the test ``nodeid`` is declared as an expected failure."""
        short = nodeid.rsplit("::", 1)[-1]
        for pattern, reason in self.expected_failures.items():
            if matches(nodeid, pattern) or matches(short, pattern):
                return f"expected failure ({pattern}): {reason}"
        return None

    def tolerance_for(self, op: str, dtype: str) -> Tolerance | None:
        """The declared tolerance for ``op`` on ``dtype`` inputs, most specific key first."""
        for key in (f"{op}:{dtype}", op, f"*:{dtype}"):
            if key in self.tolerances:
                return self.tolerances[key]
        for pattern, tolerance in self.tolerances.items():
            if matches(f"{op}:{dtype}", pattern) or matches(op, pattern):
                return tolerance
        return None

    def problems(self) -> list[str]:
        """Entries that can never match (typos): unknown features, ops or element types."""
        from hlort import dtypes
        from hlort.ir.opcodes import Opcode

        ops = {op.value for op in Opcode}
        names = {d.name for d in dtypes.ALL_DTYPES}
        out = []
        for key in self.unsupported:
            kind, _, rest = key.partition(":")
            if kind == "feature":
                if not any(matches(f, rest) for f in FEATURES):
                    out.append(
                        f"unsupported[{key!r}]: no feature matches; known: {', '.join(FEATURES)}"
                    )
            elif kind == "op":
                op, _, dtype = rest.partition(":")
                if not any(matches(o, op) for o in ops):
                    out.append(f"unsupported[{key!r}]: no HLO opcode matches {op!r}")
                if dtype and not any(matches(n, dtype) for n in names):
                    out.append(f"unsupported[{key!r}]: no element type matches {dtype!r}")
            elif kind == "dtype":
                if not any(matches(n, rest) for n in names):
                    out.append(f"unsupported[{key!r}]: no element type matches {rest!r}")
            else:
                out.append(f"unsupported[{key!r}]: keys start with op:, dtype: or feature:")
        for key, value in self.tolerances.items():
            if not isinstance(value, Tolerance):
                out.append(f"tolerances[{key!r}] is a {type(value).__name__}, not a Tolerance")
        return out
