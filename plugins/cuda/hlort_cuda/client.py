"""The cuda client: NVIDIA GPUs through the shared GPU runtime, kernels from gpukern's compiler.

Client options: ``driver`` (``"cuda-bindings"`` or ``"pycuda"``; default ``HLORT_CUDA_DRIVER``,
else cuda-bindings). Compiling lowers the optimized module with
``hlort.codegen.gpu.compiler.compile_gpu_program`` for the devices' compute capability
(:class:`~hlort_cuda.nvptx_target.NvptxTarget`); a program's ``gemm`` calls run on cuBLAS.
Where cuBLAS does not load, dots compile to hlort's own tiled dot kernel instead (loops whose
bodies hold dots included); a compile-only client keeps the gemm calls, for the machine that
runs the program.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hlort.codegen.gpu.program import GpuProgram
from hlort.errors import HlortError, InvalidArgument, Unavailable
from hlort.plugin.base.gpu_client import CompileOnlyGpuClient, GpuClient
from hlort.plugin.base.gpu_driver import GpuDriver
from hlort.plugin.options import CompileOptions
from hlort_cuda.probe import DRIVER_ENV, DRIVERS, NO_DRIVER_FIX, chosen_driver


class CudaCompiler:
    """compile_program, shared by the device and the compile-only client."""

    def gemm_library(self) -> bool:
        """Whether dots that fit a gemm become cuBLAS calls (else the tiled dot kernel): where
        cuBLAS loads."""
        from hlort_cuda.cublas import cublas_available

        return cublas_available()

    def compile_program(self, module, options: CompileOptions, target: str) -> GpuProgram:
        from hlort.codegen.gpu.compiler import compile_gpu_program
        from hlort_cuda.nvptx_target import NvptxTarget

        return compile_gpu_program(
            module,
            NvptxTarget(target),
            donated=tuple(options.donated_arguments),
            host_loops=True,
            gemm_library=self.gemm_library(),
        )


def open_driver(name: str) -> GpuDriver:
    """The named driver binding, started; UNAVAILABLE with the reason and the fix."""
    if name not in DRIVERS:
        raise InvalidArgument(
            f"CUDA driver {name!r} is not one of {', '.join(DRIVERS)} (client "
            f"option `driver` or {DRIVER_ENV})"
        )
    try:
        if name == "pycuda":
            from hlort_cuda.driver_pycuda import PyCudaDriver

            return PyCudaDriver()
        from hlort_cuda.driver_bindings import CudaBindingsDriver

        return CudaBindingsDriver()
    except HlortError:
        raise
    except ImportError as err:
        extra = "hlort-cuda[pycuda]" if name == "pycuda" else "hlort-cuda"
        raise Unavailable(
            f"the {name} CUDA driver binding does not import ({err}); fix: pip install '{extra}'"
        ) from None
    except (RuntimeError, OSError) as err:  # cuda-bindings: "Failed to dlopen libcuda.so.1"
        raise Unavailable(
            f"the NVIDIA driver cannot be used ({err}); fix: {NO_DRIVER_FIX}"
        ) from None


class CudaClient(CudaCompiler, GpuClient):
    def create_driver(self, options: Mapping[str, Any]) -> GpuDriver:
        return open_driver(str(options.get("driver") or chosen_driver()))

    def library_runner(self, program: GpuProgram):
        """This client's cuBLAS runner, made the first time a program has a gemm (programs
        compiled without cuBLAS have none); its handles are bound to this client's streams."""
        from hlort.codegen.gpu.program import LibraryCall, every_step

        if not any(isinstance(step, LibraryCall) for step in every_step(program.steps)):
            return None
        runner = getattr(self, "_cublas", None)
        if runner is None:
            from hlort_cuda.cublas import load_cublas

            runner = self._cublas = load_cublas()
        return runner

    def close_library_runners(self) -> None:
        runner = getattr(self, "_cublas", None)
        close = getattr(runner, "close", None)
        if close is not None:
            close()


class CudaCompileOnlyClient(CudaCompiler, CompileOnlyGpuClient):
    """``hlort compile --platform cuda --target sm_90``: PTX for a named GPU, no driver."""

    def gemm_library(self) -> bool:
        return True  # the program is for the machine that runs it
