"""RocmClient: the shared GPU runtime (``hlort.plugin.base.gpu_*``) on the HIP driver.

The GPU runtime does everything device-side once for both GPU plugins (devices, the caching
allocator, streams and events, transfers, launches, donation, serialization keyed by the GPU
target); ROCm says which driver to open, how to compile for a gfx target and what runs gemm
calls. :class:`RocmCompileOnlyClient` compiles for a named target with no ROCm at all
(``hlort compile --platform rocm --target gfx942``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.codegen.gpu.compiler import gpu_pass_options
from hlort.codegen.gpu.program import GpuProgram
from hlort.errors import Unavailable
from hlort.passes.pass_options import PassOptions
from hlort.plugin.base.gpu_client import CompileOnlyGpuClient, GpuClient
from hlort.plugin.base.gpu_program_runner import LibraryRunner
from hlort.plugin.options import CompileOptions
from hlort_rocm.compiler import compile_rocm_program
from hlort_rocm.executable import RocmExecutable


class RocmClient(GpuClient):
    executable_class = RocmExecutable

    def pass_options(self) -> PassOptions:
        return gpu_pass_options()  # fusions one GPU kernel schedule covers; softmax = one kernel

    def create_driver(self, options: Mapping[str, Any]):
        from hlort_rocm.probe import probe_runtime

        found = probe_runtime()
        if not found.ok:
            raise Unavailable(f"rocm: {found.reason}; {found.fix}")
        from hlort_rocm.hip_driver import HipDriver

        return HipDriver()

    def compile_program(self, module, options: CompileOptions, target: str) -> GpuProgram:
        from hlort_rocm.rocblas_gemm import load_rocblas

        return compile_rocm_program(
            module, options, target, gemm_library=load_rocblas() is not None
        )

    def library_runner(self, program: GpuProgram) -> LibraryRunner | None:
        from hlort_rocm.rocblas_gemm import RocblasGemm, load_rocblas

        library = load_rocblas()
        if library is None:
            return None
        runner = getattr(self, "_rocblas", None)
        if runner is None:
            runner = self._rocblas = RocblasGemm(library, self.driver.select)
        return runner

    def close_library_runners(self) -> None:
        runner = getattr(self, "_rocblas", None)
        if runner is not None:
            runner.close()


class RocmCompileOnlyClient(CompileOnlyGpuClient):
    """Compiles for one gfx target on any machine; keeps gemm calls for the one that runs it."""

    executable_class = RocmExecutable

    def pass_options(self) -> PassOptions:
        return gpu_pass_options()

    def compile_program(self, module, options: CompileOptions, target: str) -> GpuProgram:
        return compile_rocm_program(module, options, target, gemm_library=True)

    def library_runner(self, program: GpuProgram) -> LibraryRunner | None:
        return _runs_nowhere  # a compile-only client has no device to run anything on


def _runs_nowhere(device, call, blocks) -> None:
    raise Unavailable(
        f"{call.label}: a compile-only rocm client runs nothing; load the "
        f"serialized executable on a machine with the GPU"
    )
