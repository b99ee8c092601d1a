"""The NVPTX target: NVIDIA GPUs through PTX, made by LLVM's NVPTX back end in llvmlite.

Kernels use the ``ptx_kernel`` calling convention with global-memory (addrspace 1) pointer
arguments; shared memory is addrspace 3; thread and block indices, the barrier and the warp
shuffle are NVVM intrinsics. ``compile`` lowers the kernels' LLVM IR to PTX text for one
compute capability (``sm_80``, ``sm_90``, ...) with no GPU and no CUDA toolkit: the driver JITs
the PTX at module load, and ``ptxas`` checks it offline (ptx_check.py). Math stays in the
element layer's own straight-line code (no libdevice), so the PTX has no external calls.
"""

from __future__ import annotations

import re

import llvmlite.ir as ir

from hlort.codegen.gpu.gpu_target import I32, GpuTarget, declare
from hlort.errors import InvalidArgument

TRIPLE = "nvptx64-nvidia-cuda"
DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
# The PTX ISA version each architecture needs at least (PTX ISA release notes).
_PTX_VERSION = {70: 63, 75: 63, 80: 70, 86: 71, 87: 74, 89: 78, 90: 78, 100: 86, 120: 87}
FULL_MASK = -1  # every lane of the warp takes part in the shuffle


def parse_arch(arch: str) -> int:
    """``"sm_90"`` (or ``"90"``, ``"9.0"``) -> 90; InvalidArgument naming the fix otherwise."""
    m = re.fullmatch(r"(?:sm_|compute_)?(\d+)(?:\.(\d))?a?", arch.strip())
    if not m:
        raise InvalidArgument(
            f"CUDA target {arch!r} is not a compute capability; use e.g. sm_80 or sm_90"
        )
    value = int(m.group(1)) * 10 + int(m.group(2)) if m.group(2) else int(m.group(1))
    if value < 70:
        raise InvalidArgument(
            f"CUDA target {arch!r}: hlort needs sm_70 or newer "
            "(shfl.sync and independent thread scheduling)"
        )
    return value


def ptx_features(capability: int) -> str:
    known = [c for c in sorted(_PTX_VERSION) if c <= capability]
    return f"+ptx{_PTX_VERSION[known[-1]]}"


class NvptxTarget(GpuTarget):
    triple = TRIPLE
    data_layout = DATA_LAYOUT
    kernel_calling_convention = "ptx_kernel"
    binary_format = "ptx"
    warp_size = 32
    global_addrspace = 1
    shared_addrspace = 3
    max_threads_per_block = 1024
    max_grid_blocks = 65535
    # kernels' atomics only meet other threads of the same GPU: .gpu scope, not .sys
    atomic_sync_scope = "device"

    def __init__(self, arch: str = "sm_80", opt_level: int = 3):
        self.capability = parse_arch(arch)
        self.name = f"sm_{self.capability}"
        self.opt_level = opt_level
        self._machine = None

    def _sreg(self, b: ir.IRBuilder, name: str) -> ir.Value:
        fn = declare(b.module, f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])
        return b.call(fn, [])

    def thread_index(self, b: ir.IRBuilder) -> ir.Value:
        return self._sreg(b, "tid.x")

    def block_index(self, b: ir.IRBuilder) -> ir.Value:
        return self._sreg(b, "ctaid.x")

    def barrier(self, b: ir.IRBuilder) -> None:
        b.call(declare(b.module, "llvm.nvvm.barrier0", ir.VoidType(), []), [])

    def shuffle_xor(self, b: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        fn = declare(b.module, "llvm.nvvm.shfl.sync.bfly.i32", I32, [I32, I32, I32, I32])
        return b.call(
            fn,
            [
                ir.Constant(I32, FULL_MASK),
                value,
                ir.Constant(I32, lane_mask),
                ir.Constant(I32, 0x1F),
            ],
        )

    def target_machine(self):
        if self._machine is None:
            import llvmlite.binding as llvm

            llvm.initialize_all_targets()
            llvm.initialize_all_asmprinters()
            target = llvm.Target.from_triple(TRIPLE)
            self._machine = target.create_target_machine(
                cpu=self.name, features=ptx_features(self.capability), opt=self.opt_level
            )
        return self._machine

    def compile(self, llvm_ir: str) -> bytes:
        """PTX text (bytes, NUL-free) for the kernels of ``llvm_ir``, optimized at -O3."""
        import llvmlite.binding as llvm

        machine = self.target_machine()
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
        if self.opt_level:
            _optimize(module, machine, self.opt_level)
        return machine.emit_assembly(module).encode()


def _optimize(module, machine, level: int) -> None:
    import llvmlite.binding as llvm

    tuning = llvm.create_pipeline_tuning_options(speed_level=level)
    tuning.loop_unrolling = True
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)


def nvptx_target(arch: str = "sm_80") -> NvptxTarget:
    return NvptxTarget(arch)


__all__ = ["NvptxTarget", "nvptx_target", "parse_arch", "TRIPLE"]
