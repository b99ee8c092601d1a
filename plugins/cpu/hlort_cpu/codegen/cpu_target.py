"""The CPU as the target-neutral emitter sees it: LLVM's defaults, the buffer-table kernel.

Triple and data layout stay unset in the emitted module: the host JIT (jit.py) sets them from
the CPU it runs on when it parses the module, and asks for the host's vector width there too
(``HostTarget.vector_bits``), so one emitted module serves every host of one architecture. On
x86, ``llvm.lrint`` is cvtps2dq at every vector level (SSE2 to AVX-512), so the f32 exp rounds
its exponent with it (``MathPolicy.lrint_instruction``); other architectures keep roundeven.
"""

from __future__ import annotations

import platform

from hlort.codegen.llvm.target_spec import KernelSignature, MathPolicy, TargetSpec

X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")

CPU_TARGET = TargetSpec(
    "cpu",
    kernel_signature=KernelSignature.BUFFER_TABLE,
    math=MathPolicy(
        f32_via_f64=True, libm=True, vector_variant_lanes=(2, 4, 8), lrint_instruction=X86
    ),
)
