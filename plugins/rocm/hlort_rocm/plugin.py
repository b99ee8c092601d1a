"""RocmPlugin: the ``rocm`` platform. Probe, capabilities and client creation.

The probe is cheap (a dlopen of the HIP runtime, a look for hip-python, a device count) and
never raises; without ROCm it says ``unavailable: no ROCm runtime (libamdhip64.so) found`` with
the fix. Compiling for a named target needs no runtime and no GPU
(``create_compile_only_client("gfx942")``, ``hlort compile --platform rocm --target gfx942``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.plugin.api import AttributeValue, ProbeResult
from hlort.plugin.base.gpu_plugin import GpuPlugin  # not gpu_client: cheap to import

PLATFORM = "rocm"
VERSION = "0.1.0"


class RocmPlugin(GpuPlugin):
    name = PLATFORM
    api_version = (1, 1)  # create_compile_only_client (hlort compile --target)
    priority = 90  # real hardware: preferred over the host backends when it starts

    @property
    def client_class(self):  # imported on use: the client pulls in the GPU runtime
        from hlort_rocm.client import RocmClient

        return RocmClient

    @property
    def compile_only_client_class(self):
        from hlort_rocm.client import RocmCompileOnlyClient

        return RocmCompileOnlyClient

    def probe(self) -> ProbeResult:
        from hlort_rocm.probe import probe_runtime

        found = probe_runtime()
        if found.ok:
            return ProbeResult.ok()
        return ProbeResult.unavailable(found.reason, fix=found.fix)

    def attributes(self) -> Mapping[str, AttributeValue]:
        return {
            "version": VERSION,
            "vendor": "hlort",
            "description": "AMD GPUs: AMDGPU code objects from llvmlite, HIP runtime",
        }

    def check_target(self, target: str) -> str:
        from hlort_rocm.amdgpu_target import gfx_target

        return gfx_target(target).name

    def create_client(self, options: Mapping[str, Any] | None = None):
        return self.client_class(self, options)
