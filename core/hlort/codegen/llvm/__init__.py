"""The shared LLVM emitter (llvmlite): elemental IR, index maps, fused loops, reductions, JIT.

Reused by the CPU plugin and, later, the CUDA and ROCm plugins. Importing this package imports
llvmlite; the core never does so unless a backend asks.
"""

from hlort.codegen.llvm.compiled import (  # noqa: F401
    CompiledKernel,
    compile_kernel_module,
    load_kernels,
)
from hlort.codegen.llvm.jit import HostTarget, JitEngine, jit_engine  # noqa: F401
from hlort.codegen.llvm.kernel_builder import KernelInfo, KernelModule, classify  # noqa: F401
