"""The ``cpu`` plugin: entry point of group ``hlort.plugins``; cheap to import and probe."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from typing import Any

from hlort.plugin.api import AttributeValue, ProbeResult
from hlort.plugin.base import SimplePlugin
from hlort.plugin.capabilities import Capabilities
from hlort.plugin.versioning import API_VERSION
from hlort_cpu.version import PLUGIN_VERSION


class CpuPlugin(SimplePlugin):
    name = "cpu"
    api_version = API_VERSION
    priority = 100  # the default on a machine without accelerators

    @property
    def client_class(self):  # imported lazily: llvmlite loads only when a client starts
        from hlort_cpu.client import CpuClient

        return CpuClient

    def probe(self) -> ProbeResult:
        if importlib.util.find_spec("llvmlite") is None:
            return ProbeResult.unavailable("llvmlite is not installed", "pip install 'hlort[llvm]'")
        return ProbeResult.ok()

    def attributes(self) -> Mapping[str, AttributeValue]:
        return {
            "version": PLUGIN_VERSION,
            "vendor": "hlort",
            "cores": os.cpu_count() or 1,
            "description": "LLVM-compiled fused kernels on the host CPU",
        }

    def capabilities(self) -> Capabilities:
        return Capabilities(
            serialization=True,
            donation=True,
            memory_stats=True,
            compiled_memory_stats=True,
            cost_analysis=True,
            artifacts=True,
            zero_copy=True,
            multi_device=_devices_from_environment() > 1,
        )

    def conformance_profile(self):
        """Complex power is exp(b log a): the last-bit rounding of log a, which glibc (behind
        the interpreter's NumPy) and complex_math.py make differently, grows by |b log a|."""
        from hlort.plugin.conformance_profile import ConformanceProfile, Tolerance

        return ConformanceProfile(
            tolerances={"power:c128": Tolerance(ulp=4, rtol=1e-13, atol=1e-15)}
        )

    def create_client(self, options: Mapping[str, Any] | None = None):
        from hlort_cpu.codegen.llvm_start import start_in_background

        start_in_background()  # LLVM starts while the compiler's modules import
        return self.client_class(self, options)


def _devices_from_environment() -> int:
    """HLORT_CPU_DEVICES (cheap: no llvmlite); a bad value counts as one device here and is
    reported, with its fix, when a client starts."""
    from hlort.errors import HlortError
    from hlort_cpu.virtual_devices import device_count

    try:
        return device_count()
    except HlortError:
        return 1
