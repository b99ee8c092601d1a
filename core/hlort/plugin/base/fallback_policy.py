"""What a plugin does when part of a program would run on the reference interpreter.

A plugin that compiles what it can and runs the rest on the interpreter's functions (cpu's
FALLBACK thunks) is correct but can be many times slower, and nothing in the result says so.
``HLORT_FALLBACK`` decides, for every executable compiled:

- ``warn`` (default): compile, and log one warning per executable on the ``hlort.fallback``
  logger naming each instruction that falls back and why;
- ``error``: refuse to compile: UNIMPLEMENTED naming each instruction and the reason (the test
  suite runs this way, so a new fallback fails a test instead of slowing a program silently);
- ``allow``: compile quietly (the counts and reasons are still in the executable's
  :meth:`FallbackReport.records`, ``hlort compile`` and ``hlort run --profile``).

A plugin collects a :class:`FallbackReport` while it compiles and calls :meth:`apply` once
the executable's fallbacks are known. A compile's own ``CompileOptions(fallback=...)`` (or
``HLORT_FLAGS=--fallback=...``) overrides the variable for that compile: the runtime runs the
plugin's compile inside :func:`fallback_policy_for`, so every plugin honours it unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import os
from collections.abc import Iterator

from hlort.errors import InvalidArgument, Unimplemented
from hlort.lazy_dataclass import dataclass
from hlort.log import lazy_logger

ENV_VAR = "HLORT_FALLBACK"
LOGGER = lazy_logger("hlort.fallback")
_OVERRIDE: contextvars.ContextVar[FallbackPolicy | None] = contextvars.ContextVar(
    "hlort_fallback_policy", default=None
)


class FallbackPolicy(enum.Enum):
    ERROR = "error"
    WARN = "warn"
    ALLOW = "allow"


def fallback_policy() -> FallbackPolicy:
    """The policy of the compile in progress (:func:`fallback_policy_for`), else the one
    ``HLORT_FALLBACK`` names (read at every compile, so tests may change it)."""
    override = _OVERRIDE.get()
    if override is not None:
        return override
    value = os.environ.get(ENV_VAR, "").strip().lower() or FallbackPolicy.WARN.value
    try:
        return FallbackPolicy(value)
    except ValueError:
        choices = ", ".join(p.value for p in FallbackPolicy)
        raise InvalidArgument(
            f"{ENV_VAR}={os.environ[ENV_VAR]!r} is not a fallback policy; use one of {choices}"
        ) from None


@contextlib.contextmanager
def fallback_policy_for(policy: str | FallbackPolicy | None) -> Iterator[None]:
    """Within the block, :func:`fallback_policy` is ``policy`` (None: no override)."""
    if policy is None:
        yield
        return
    token = _OVERRIDE.set(FallbackPolicy(policy))
    try:
        yield
    finally:
        _OVERRIDE.reset(token)


@dataclass(frozen=True)
class FallbackRecord:
    """One instruction that runs on the reference interpreter, and why."""

    instruction: str  # its name in the optimized module
    kind: str  # what it is ("sort", "fusion(kLoop)")
    reason: str

    def __str__(self) -> str:
        return f"{self.instruction} ({self.kind}): {self.reason}"


class FallbackReport:
    """The fallbacks of one executable, collected while it compiles."""

    def __init__(self, platform: str, module_name: str):
        self.platform, self.module_name = platform, module_name
        self.records: list[FallbackRecord] = []

    def add(self, instruction: str, kind: str, reason: str) -> None:
        self.records.append(FallbackRecord(instruction, kind, reason))

    def __len__(self) -> int:
        return len(self.records)

    def summary(self) -> str:
        n = len(self.records)
        listed = "; ".join(map(str, self.records))
        return (
            f"{self.platform}: {n} instruction(s) of module {self.module_name} run on the "
            f"reference interpreter (FALLBACK): {listed}"
        )

    def apply(self, policy: FallbackPolicy | None = None) -> None:
        """Raise, warn once or stay quiet, as the policy says; nothing when there is none."""
        if not self.records:
            return
        policy = policy or fallback_policy()
        if policy is FallbackPolicy.ERROR:
            raise Unimplemented(
                f"{self.summary()}; {ENV_VAR}=error refuses them (set "
                f"{ENV_VAR}=warn or allow to run them there)"
            )
        if policy is FallbackPolicy.WARN:
            LOGGER.warning("%s (set %s=allow to silence, error to refuse)", self.summary(), ENV_VAR)
