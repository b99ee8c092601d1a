"""The platform under test, as the suite's tests see it.

One :class:`ConformanceSession` per pytest run: it starts the plugin's client through the
registry (as users do), reads the plugin's capabilities and profile, and gives tests the few
operations they share: compile a module through the core (verify, passes, plugin compile),
run it on raw plugin buffers, and decide whether a case or feature is declared unsupported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hlort.errors import HlortError
from hlort.ir.module import Module
from hlort.plugin import api
from hlort.plugin.conformance_profile import ConformanceProfile
from hlort.plugin.options import CompileOptions
from hlort.testing.op_case import OpCase

TIMEOUT_S = 120.0
"""How long a test waits for any event before calling the backend hung."""

_CAPABILITY_OF_FEATURE = {
    "serialization": "serialization",
    "donation": "donation",
    "memory_stats": "memory_stats",
    "cost_analysis": "cost_analysis",
    "compiled_memory_stats": "compiled_memory_stats",
}


@dataclass
class ConformanceSession:
    platform: str
    plugin: api.Plugin
    client: api.Client
    backend: Any  # hlort.runtime.Backend
    profile: ConformanceProfile
    capabilities: api.Capabilities
    strict: bool = False
    quick: bool = False

    @classmethod
    def start(cls, platform: str, *, strict: bool = False, quick: bool = False):
        """Start ``platform``'s client; HlortError says why it cannot."""
        import hlort
        from hlort.plugin.registry import default_registry

        backend = hlort.backend(platform)
        record = default_registry().record(platform)
        plugin = record.plugin
        profile = plugin.conformance_profile()
        if not isinstance(profile, ConformanceProfile):
            raise TypeError(
                f"{platform}: conformance_profile() returned a "
                f"{type(profile).__name__}, not a ConformanceProfile"
            )
        return cls(
            platform, plugin, backend.client, backend, profile, plugin.capabilities(), strict, quick
        )

    # -- devices -------------------------------------------------------------------------------
    def devices(self) -> list[api.Device]:
        return list(self.client.addressable_devices())

    @property
    def device(self) -> api.Device:
        return self.devices()[0]

    # -- what is supported ---------------------------------------------------------------------
    def feature_unsupported(self, feature: str) -> str | None:
        """Why ``feature`` is not to be tested (profile, then capabilities), or None."""
        reason = self.profile.feature_reason(feature)
        if reason:
            return reason
        capability = _CAPABILITY_OF_FEATURE.get(feature)
        if capability and not getattr(self.capabilities, capability):
            return f"capabilities().{capability} is False"
        return None

    def case_unsupported(self, case: OpCase) -> str | None:
        """Why ``case`` is not to be run (its op, element types, or the capabilities), or None."""
        keys = [f"op:{case.op}", f"op:{case.op}:{case.dtype}"]
        keys += [f"op:{op}" for op in sorted(case.opcodes - {case.op})]
        keys += [f"dtype:{d}" for d in sorted(case.dtypes | {case.dtype})]
        reason = self.profile.unsupported_reason(*keys)
        if reason:
            return reason
        caps = self.capabilities
        for op in sorted(case.opcodes):
            if not caps.supports_opcode(op) and op != "parameter":
                return f"capabilities().opcodes does not include {op}"
        for dtype in sorted(case.dtypes):
            if not caps.supports_dtype(dtype):
                return f"capabilities().dtypes does not include {dtype}"
        return None

    # -- running programs ----------------------------------------------------------------------
    def compile(
        self,
        module: Module,
        device: api.Device | None = None,
        options: CompileOptions | None = None,
    ) -> api.Executable:
        """Verify, run the core passes and the plugin's compile, as ``hlort.compile`` does."""
        from hlort.runtime.compile import compile_on

        wrapped = self.backend.wrap_device(device) if device is not None else None
        return compile_on(self.backend, module, wrapped, options).raw

    def put(self, arrays: Sequence[np.ndarray], device: api.Device | None = None) -> list:
        device = device or self.device
        return [self.client.buffer_from_host(np.asarray(a), device) for a in arrays]

    def fetch(self, buffers: Sequence[api.Buffer]) -> list[np.ndarray]:
        futures = [b.to_host() for b in buffers]
        return [f.result(TIMEOUT_S) for f in futures]

    def run(
        self,
        executable: api.Executable,
        arrays: Sequence[np.ndarray],
        device: api.Device | None = None,
    ) -> list[np.ndarray]:
        """Transfer ``arrays``, execute on one device, fetch every output, free everything."""
        args = self.put(arrays, device)
        outputs: list[api.Buffer] = []
        try:
            outputs = executable.execute([args])[0]
            return self.fetch(outputs)
        finally:
            for buf in [*args, *outputs]:
                _quiet_delete(buf)


def _quiet_delete(buf: api.Buffer) -> None:
    try:
        buf.delete()
    except HlortError:
        pass
