"""The CPU as the target-neutral emitter sees it: LLVM's defaults, the buffer-table kernel.

Triple and data layout stay unset in the emitted module: the host JIT (jit.py) sets them from
the CPU it runs on when it parses the module, and asks for the host's vector width there too
(``HostTarget.vector_bits``), so one emitted module serves every x86 or Arm host of the same
vector instructions. The one host-dependent choice the emitter makes, f32 exp's scaling through
``llvm.ldexp`` (``MathPolicy.ldexp_instruction``), needs AVX-512 (vscalefps; without it LLVM
calls ldexpf per element): it is read from NumPy's CPU feature table (the same CPUID the JIT's
target features come from; the compile cache key holds those features, so code built on one
host never loads on another).
"""

from __future__ import annotations

from hlort.codegen.llvm.target_spec import KernelSignature, MathPolicy, TargetSpec


def host_has_avx512f() -> bool:
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # NumPy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return False
    return bool(__cpu_features__.get("AVX512F", False))


CPU_TARGET = TargetSpec(
    "cpu",
    kernel_signature=KernelSignature.BUFFER_TABLE,
    math=MathPolicy(
        f32_via_f64=True,
        libm=True,
        vector_variant_lanes=(2, 4, 8),
        ldexp_instruction=host_has_avx512f(),
    ),
)
