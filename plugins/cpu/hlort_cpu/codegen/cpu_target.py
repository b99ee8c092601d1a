"""The CPU as the target-neutral emitter sees it: LLVM's defaults, the buffer-table kernel.

Triple and data layout stay unset in the emitted module: the host JIT (jit.py) sets them from
the CPU it runs on when it parses the module, and asks for the host's vector width there too
(``HostTarget.vector_bits``), so one emitted module serves every x86 or Arm host.
"""

from __future__ import annotations

from hlort.codegen.llvm.target_spec import KernelSignature, MathPolicy, TargetSpec

CPU_TARGET = TargetSpec(
    "cpu",
    kernel_signature=KernelSignature.BUFFER_TABLE,
    math=MathPolicy(f32_via_f64=True, libm=True, vector_variant_lanes=(2, 4, 8)),
)
