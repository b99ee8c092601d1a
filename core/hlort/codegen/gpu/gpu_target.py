"""What a GPU kernel schedule needs to know about its target: the one place CUDA and ROCm differ.

The schedules in this package (elementwise loops, row reductions, ...) are written once against a
:class:`GpuTarget`: the triple and data layout, the kernel calling convention, the address spaces
of global and shared memory, the warp (wavefront) size, and four intrinsics (thread index, block
index, barrier, a 32-bit cross-lane exchange). The NVPTX target lives in plugins/cuda
(hlort_cuda/nvptx_target.py), the AMDGPU one in plugins/rocm. Launch shapes are chosen at
compile time and baked into the kernels, so no block-size or grid-size query is needed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import llvmlite.ir as ir

from hlort.codegen.llvm.kernel_abi import KernelEntry, define_kernel
from hlort.codegen.llvm.target_spec import AddressSpaces, KernelSignature, MathPolicy, TargetSpec

I32 = ir.IntType(32)


class GpuTarget(ABC):
    """A GPU code-generation target; subclasses fill in the attributes and intrinsics."""

    name: str = ""  # "sm_90", "gfx90a": the device the code is compiled for
    triple: str = ""
    data_layout: str = ""
    kernel_calling_convention: str = ""  # "ptx_kernel", "amdgpu_kernel"
    binary_format: str = ""  # "ptx", "hsaco"
    warp_size: int = 32
    global_addrspace: int = 1
    shared_addrspace: int = 3
    constant_addrspace: int = 1  # literal arrays: global memory (constant space is only 64 KiB)
    local_addrspace: int = 0  # allocas (AMDGPU: 5)
    max_threads_per_block: int = 1024
    max_grid_blocks: int = 65535  # per grid dimension the schedules use (x)
    # Atomics (scatter): the LLVM sync scope ("" = system) and empty-node metadata that let the
    # backend pick its native atomic instructions (AMDGPU: "agent" and
    # amdgpu.no.fine.grained.memory, since device buffers are coarse-grained; otherwise LLVM
    # expands every atomicrmw to a compare-and-swap loop).
    atomic_sync_scope: str = ""
    atomic_metadata: tuple[str, ...] = ()
    # No libm, no SIMD copies, and f32 functions in f32 (float_math_f32.py): f64 runs at 1/32 to
    # 1/64 of the f32 rate on consumer GPUs, so an f32 kernel carries no f64 instruction.
    math: MathPolicy = MathPolicy(f32_via_f64=False, libm=False, vector_variant_lanes=())

    @property
    def spec(self) -> TargetSpec:
        """The element layer's view of this target (hlort.codegen.llvm.target_spec): pointer
        arguments in global memory and the target's math policy (``math``)."""
        spaces = AddressSpaces(
            global_memory=self.global_addrspace,
            shared=self.shared_addrspace,
            constant=self.constant_addrspace,
            local=self.local_addrspace,
        )
        return TargetSpec(
            self.name,
            triple=self.triple,
            data_layout=self.data_layout or None,
            kernel_signature=KernelSignature.POINTER_ARGS,
            kernel_calling_convention=self.kernel_calling_convention or None,
            address_spaces=spaces,
            math=self.math,
            threads_per_warp=self.warp_size,
        )

    def new_module(self, name: str) -> ir.Module:
        return self.spec.new_module(name)

    def define_kernel(self, module: ir.Module, name: str, num_args: int) -> KernelEntry:
        """A kernel taking ``num_args`` global pointers (kernel_abi.py owns the signature); they
        never alias (buffer assignment keeps a kernel's outputs off its inputs)."""
        entry = define_kernel(module, self.spec, name, num_args)
        for arg in entry.function.args:
            arg.add_attribute("noalias")
        return entry

    def atomic_rmw(self, b: ir.IRBuilder, op: str, ptr: ir.Value, value: ir.Value) -> ir.Value:
        """``atomicrmw op`` (relaxed order) in the target's scope; returns the old value."""
        return self._atomic(b, b.atomic_rmw(op, ptr, value, self._ordering()))

    def compare_exchange(
        self, b: ir.IRBuilder, ptr: ir.Value, expected: ir.Value, new: ir.Value
    ) -> ir.Value:
        """``cmpxchg`` (relaxed order) in the target's scope; returns ``{old, success}``."""
        order = self._ordering()
        return self._atomic(b, b.cmpxchg(ptr, expected, new, order, "monotonic"))

    def _ordering(self) -> str:
        # llvmlite prints the ordering right where LLVM expects the optional syncscope
        scope = self.atomic_sync_scope
        return f'syncscope("{scope}") monotonic' if scope else "monotonic"

    def _atomic(self, b: ir.IRBuilder, instr: ir.Instruction) -> ir.Instruction:
        for name in self.atomic_metadata:
            instr.set_metadata(name, b.module.add_metadata([]))
        return instr

    # -- intrinsics (each returns an i32 or emits the instruction) ----------------------------
    @abstractmethod
    def thread_index(self, b: ir.IRBuilder) -> ir.Value:
        """threadIdx.x as i32."""

    @abstractmethod
    def block_index(self, b: ir.IRBuilder) -> ir.Value:
        """blockIdx.x as i32."""

    @abstractmethod
    def barrier(self, b: ir.IRBuilder) -> None:
        """__syncthreads(): every thread of the block, shared memory visible after it."""

    @abstractmethod
    def shuffle_xor(self, b: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        """The i32 ``value`` of lane ``lane ^ lane_mask`` (all lanes of the warp take part)."""

    @abstractmethod
    def compile(self, llvm_ir: str) -> bytes:
        """The module's IR lowered to the target's loadable form (PTX text, an object)."""


def declare(module: ir.Module, name: str, ret: ir.Type, args: list[ir.Type]) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)


__all__ = ["GpuTarget", "declare"]
