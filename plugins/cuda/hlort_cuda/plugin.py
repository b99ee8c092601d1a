"""The ``cuda`` platform's plugin object (entry point ``hlort.plugins: cuda``).

Importing it is cheap: no CUDA binding, no llvmlite. ``probe()`` asks libcuda itself (probe.py)
whether a driver and a device are there; with one, cuda is preferred over cpu (priority 200 >
100). ``create_compile_only_client("sm_90")`` compiles without a GPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.plugin.api import AttributeValue, ProbeResult
from hlort.plugin.base.gpu_plugin import GpuPlugin  # not gpu_client: cheap to import

PLATFORM = "cuda"
VERSION = "0.1.0"


class CudaPlugin(GpuPlugin):
    name = PLATFORM
    api_version = (1, 1)  # create_compile_only_client (hlort compile --target)
    priority = 200  # above cpu (100) when a GPU works; probe() says when it does not

    @property
    def client_class(self):  # type: ignore[override]
        from hlort_cuda.client import CudaClient

        return CudaClient

    @property
    def compile_only_client_class(self):  # type: ignore[override]
        from hlort_cuda.client import CudaCompileOnlyClient

        return CudaCompileOnlyClient

    def probe(self) -> ProbeResult:
        from hlort_cuda.probe import probe_cuda

        return probe_cuda()

    def attributes(self) -> Mapping[str, AttributeValue]:
        return {
            "version": VERSION,
            "vendor": "NVIDIA (hlort)",
            "description": "NVIDIA GPUs: PTX kernels from llvmlite, cuBLAS dots",
        }

    def conformance_profile(self):
        """Complex power is exp(b log a) in the shared element layer, as on cpu: the last-bit
        rounding of log a differs from NumPy's and grows by |b log a| (gpukern measured the
        same 2e-15 relative difference in the host simulator)."""
        from hlort.plugin.conformance_profile import ConformanceProfile, Tolerance

        return ConformanceProfile(
            tolerances={"power:c128": Tolerance(ulp=4, rtol=1e-13, atol=1e-15)}
        )

    def check_target(self, target: str) -> str:
        from hlort_cuda.targets import canonical_target

        return canonical_target(target)

    def create_client(self, options: Mapping[str, Any] | None = None):
        return self.client_class(self, options)
