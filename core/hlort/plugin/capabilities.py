"""What a plugin says about itself before and after it starts: probe result, capabilities, stats.

These are plain dataclasses so the registry, ``hlort devices`` and the conformance suite can read
them without knowing the plugin.
"""

from __future__ import annotations

from dataclasses import field

from hlort.lazy_dataclass import dataclass


@dataclass(frozen=True)
class ProbeResult:
    """The answer of ``Plugin.probe()``: can a client start here, and if not, why and the fix."""

    available: bool
    reason: str = ""
    fix: str = ""

    @classmethod
    def ok(cls) -> ProbeResult:
        return cls(True)

    @classmethod
    def unavailable(cls, reason: str, fix: str = "") -> ProbeResult:
        return cls(False, reason, fix)

    def message(self) -> str:
        if self.available:
            return "ok"
        return f"{self.reason}; fix: {self.fix}" if self.fix else self.reason


@dataclass(frozen=True)
class Capabilities:
    """Optional features a plugin supports; the conformance suite skips what is declared absent.

    ``dtypes``/``opcodes``: HLO names (``"bf16"``, ``"dot"``) the backend handles, or None for
    all of them. The booleans say whether the matching optional API methods are implemented.
    ``extra`` holds vendor facts (``{"max_threads": 8}``) for tools that read capabilities;
    ``hlort devices`` shows ``Plugin.attributes()`` and ``Device.attributes()`` instead.
    """

    dtypes: frozenset[str] | None = None
    opcodes: frozenset[str] | None = None
    serialization: bool = False
    donation: bool = False
    zero_copy: bool = False
    cost_analysis: bool = False
    compiled_memory_stats: bool = False
    memory_stats: bool = False
    multi_device: bool = False
    artifacts: bool = False
    extra: dict[str, object] = field(default_factory=dict)

    def supports_dtype(self, name: str) -> bool:
        return self.dtypes is None or name in self.dtypes

    def supports_opcode(self, name: str) -> bool:
        return self.opcodes is None or name in self.opcodes


@dataclass(frozen=True)
class MemoryStats:
    """A device's allocator statistics (PJRT_Device_MemoryStats); unknown fields are None."""

    bytes_in_use: int
    peak_bytes_in_use: int | None = None
    num_allocs: int | None = None
    bytes_limit: int | None = None
    largest_alloc_size: int | None = None


@dataclass(frozen=True)
class CompiledMemoryStats:
    """Sizes an executable needs per launch (PJRT_Executable_GetCompiledMemoryStats)."""

    argument_size_in_bytes: int
    output_size_in_bytes: int
    temp_size_in_bytes: int = 0
    alias_size_in_bytes: int = 0
    generated_code_size_in_bytes: int = 0
