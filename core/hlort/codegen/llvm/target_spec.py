"""What the target-neutral emitter needs to know about a target, as plain data.

The element layer (elemental ops, math, index maps, the fused computation's elements) is the same
for every LLVM target; what differs is written down here once and read by the emitter instead of
being assumed: the triple and data layout a module carries, the kernel calling convention and
signature (kernel_abi.py), the address spaces of global, constant and shared memory, the vector
width, and the math policy. A backend describes its target with one ``TargetSpec`` (the CPU
plugin: ``hlort_cpu.codegen.cpu_target``; a GPU plugin: NVPTX or AMDGPU in its own package) and
never edits the core to add one.
"""

from __future__ import annotations

from dataclasses import field
from enum import Enum

import llvmlite.ir as ir

from hlort.lazy_dataclass import dataclass


class KernelSignature(Enum):
    """How a kernel receives its buffers (kernel_abi.py emits both)."""

    BUFFER_TABLE = "buffer_table"  # void(ptr buffers, i64 begin, i64 end): the host's thread pool
    # calls each kernel on a range [begin, end) of outer iterations with a table of pointers
    POINTER_ARGS = "pointer_args"  # void(ptr addrspace(G) b0, ..., b(n-1)): one argument per
    # buffer in global memory; the launch grid, not arguments, says which elements a thread does


@dataclass(frozen=True)
class AddressSpaces:
    """LLVM address-space numbers (0 everywhere on a CPU).

    NVPTX: global 1, shared 3, constant 4, local 5; AMDGPU: global 1, shared (LDS) 3,
    constant 4, private 5. ``shared`` is None where the target has no shared memory.
    """

    generic: int = 0
    global_memory: int = 0  # kernel buffer arguments (POINTER_ARGS)
    constant: int = 0  # constant arrays the emitter makes (literals, math tables)
    shared: int | None = None
    local: int = 0  # allocas


@dataclass(frozen=True)
class MathPolicy:
    """How accurate math is bought on this target.

    ``f32_via_f64``: True: the f32 erf, sin, cos, tan, pow, expm1, log1p, cbrt, atan2 and
    rsqrt are evaluated in f64 and rounded (<= 1 ulp; the CPU's choice, where f64 is as fast).
    False: their all-f32 forms (float_math_f32.py, float_log_f32.py; <= 1 ulp measured, see
    float_math.py's table), so f32 kernels have no f64 instruction: the GPU targets' choice
    (gpu_target.GpuTarget.math), since f64 runs at 1/32-1/64 of the f32 rate on consumer GPUs.
    complex64 math (abs, divide, sign, the transcendentals, power, atan2) follows the same
    choice: True: in f64 and rounded once per part (complex_math.py, complex_values.py); False:
    in f32 (complex_math_f32.py, complex_math_ops.F32_KIT; bounds in its test,
    plugins/cpu/tests/test_complex_math_f32.py), so c64 kernels have no f64 instruction either.
    ``libm``: emitted code may call the C math library and compiler-rt helpers (LLVM lowers
    ``frem`` to ``fmod``, and some conversions to compiler-rt calls, on CPUs; GPU targets say
    False and lower those natively). ``vector_variant_lanes``: the vector widths of the SIMD
    copies of outlined math functions (outlined_math.py; empty: scalar only, as on GPUs).
    ``lrint_instruction``: ``llvm.lrint`` on f32 scalars and vectors is one instruction (x86:
    cvtps2dq), so the f32 exp rounds its exponent to an integer with it (float_parts.round_to_int)
    rather than by roundeven (vrndscaleps, two operations) and a conversion; False where it may
    become a libm call.
    """

    f32_via_f64: bool = True
    libm: bool = True
    vector_variant_lanes: tuple[int, ...] = (2, 4, 8)  # SSE2, AVX2 and AVX-512 vectors of f64
    lrint_instruction: bool = False


@dataclass(frozen=True)
class TargetSpec:
    """One LLVM target as the emitter sees it.

    ``triple``/``data_layout`` None: the runtime that compiles the module sets them (the CPU's
    host JIT does, from the host it runs on). ``kernel_calling_convention`` None: LLVM's default
    C convention (``ptx_kernel`` on NVPTX, ``amdgpu_kernel`` on AMDGPU). ``kernel_attributes``
    go on every kernel function. ``vector_bits``: the widest vector register (what a schedule
    vectorizes loads to); ``threads_per_warp``: warp (NVIDIA) or wavefront (AMD) size, None on
    CPUs. ``features`` holds anything else a backend wants its schedules to read
    (e.g. ``{"sm": 90}``); the core never reads it.
    """

    name: str
    triple: str | None = None
    data_layout: str | None = None
    kernel_signature: KernelSignature = KernelSignature.BUFFER_TABLE
    kernel_calling_convention: str | None = None
    kernel_attributes: tuple[str, ...] = ("nounwind",)
    address_spaces: AddressSpaces = field(default_factory=AddressSpaces)
    vector_bits: int = 128
    math: MathPolicy = field(default_factory=MathPolicy)
    threads_per_warp: int | None = None
    features: tuple[tuple[str, object], ...] = ()

    def feature(self, key: str, default: object = None) -> object:
        return dict(self.features).get(key, default)

    def pointer(self, space: int | None = None) -> ir.PointerType:
        """An opaque pointer in address space ``space`` (generic when None)."""
        space = self.address_spaces.generic if space is None else space
        return ir.PointerType(addrspace=space) if space else ir.PointerType()

    def new_module(self, name: str) -> ir.Module:
        """An empty LLVM module for this target (triple and data layout set when known)."""
        module = ir.Module(name)
        if self.triple is not None:
            module.triple = self.triple
        if self.data_layout is not None:
            module.data_layout = self.data_layout
        return module


NEUTRAL_TARGET = TargetSpec("neutral")
"""A target with LLVM's defaults (address space 0, C calling convention, the buffer-table kernel
signature, f32 math via f64, libm present): what the CPU uses, and what element-level tests of
the neutral layer emit for."""
