"""RocmPlugin: the ``rocm`` platform. Probe, capabilities and client creation.

The probe is cheap (a dlopen of the HIP runtime, a look for hip-python, a device count) and
never raises; without ROCm it says ``unavailable: no ROCm runtime (libamdhip64.so) found`` with
the fix. Compiling for a named target needs no runtime and no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.errors import Unavailable
from hlort.plugin.api import AttributeValue, Plugin, ProbeResult

PLATFORM = "rocm"
VERSION = "0.1.0"


class RocmPlugin(Plugin):
    name = PLATFORM
    api_version = (1, 0)
    priority = 90  # real hardware: preferred over the host backends when it starts

    def probe(self) -> ProbeResult:
        from hlort_rocm.probe import probe_runtime

        found = probe_runtime()
        return ProbeResult.ok() if found.ok else ProbeResult.unavailable(found.reason,
                                                                          fix=found.fix)

    def attributes(self) -> Mapping[str, AttributeValue]:
        return {"version": VERSION, "vendor": "hlort",
                "description": "AMD GPUs: AMDGPU code objects from llvmlite, HIP runtime"}

    def create_client(self, options: Mapping[str, Any] | None = None):
        found = self.probe()
        raise Unavailable(f"{PLATFORM}: {found.reason}; {found.fix}")
