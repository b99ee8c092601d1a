"""The plugin interface: the stable API (api), discovery (registry) and helpers (base)."""

from hlort.plugin.api import (  # noqa: F401
    API_VERSION,
    MIN_SUPPORTED_MINOR,
    Buffer,
    Capabilities,
    Client,
    CompiledMemoryStats,
    CompileOptions,
    DebugOptions,
    Device,
    Event,
    Executable,
    ExecuteOptions,
    Future,
    HostBufferSemantics,
    MemorySpace,
    MemoryStats,
    Plugin,
    ProbeResult,
)
