"""The AMDGPU target of the shared GPU kernel schedules (``hlort.codegen.gpu``).

The schedules are written once against :class:`~hlort.codegen.gpu.gpu_target.GpuTarget`; this
subclass gives them AMD's side: ``amdgpu_kernel`` functions with global (addrspace 1) pointer
arguments, LDS (addrspace 3) for shared memory, a 64-lane wavefront, the work-item and
work-group id intrinsics, ``s_barrier`` between work-group-scope fences (so LDS writes are
visible after it), and a cross-lane exchange through ``ds_bpermute`` (every lane reads the
register of lane ``lane ^ mask``; the byte address is the source lane times 4). ``compile``
lowers the kernels to an object (a fresh parse per emission, code_object.py) and links it into a
code object with ld.lld, which is the binary the HIP loader takes.
"""

from __future__ import annotations

import re

import llvmlite.ir as ir

from hlort.codegen.gpu.gpu_target import I32, GpuTarget, declare
from hlort_rocm.amdgpu_target import (
    ADDRESS_SPACE_GLOBAL,
    ADDRESS_SPACE_SHARED,
    BARRIER_INTRINSIC,
    BARRIER_SYNC_SCOPE,
    BLOCK_ID_INTRINSIC,
    CALLING_CONVENTION,
    DEFAULT_CODE_OBJECT_VERSION,
    THREAD_ID_INTRINSIC,
    TRIPLE,
    code_object_version,
    flat_workgroup_size_attribute,
    gfx_target,
)
from hlort_rocm.code_object import CompiledObject, compile_ir, target_data_layout
from hlort_rocm.lld_linker import find_linker, link_code_object


class AmdgpuTarget(GpuTarget):
    triple = TRIPLE
    kernel_calling_convention = CALLING_CONVENTION
    binary_format = "hsaco"
    global_addrspace = ADDRESS_SPACE_GLOBAL
    shared_addrspace = ADDRESS_SPACE_SHARED
    max_threads_per_block = 512  # every kernel says so to LLVM (fewer registers reserved)
    max_grid_blocks = 65535  # the schedules' grid-stride loops cover any size with this many
    # hipMalloc'd buffers are coarse-grained: agent-scope atomics on them can be the native
    # global_atomic_* instructions (without the metadata LLVM emits compare-and-swap loops)
    atomic_sync_scope = "agent"
    atomic_metadata = ("amdgpu.no.fine.grained.memory",)

    def __init__(
        self,
        gfx: str = "gfx942",
        *,
        code_object: int = DEFAULT_CODE_OBJECT_VERSION,
        opt_level: int = 3,
    ):
        self.gfx = gfx_target(gfx)
        self.name = self.gfx.name
        self.warp_size = self.gfx.wavefront_size
        self.code_object_version = code_object_version(code_object)
        self.opt_level = opt_level
        self.data_layout = target_data_layout(self.gfx)
        self.last_object: CompiledObject | None = None  # the latest compile, for --dump-dir

    def thread_index(self, b: ir.IRBuilder) -> ir.Value:
        return b.call(declare(b.module, THREAD_ID_INTRINSIC.format(axis="x"), I32, []), [])

    def block_index(self, b: ir.IRBuilder) -> ir.Value:
        return b.call(declare(b.module, BLOCK_ID_INTRINSIC.format(axis="x"), I32, []), [])

    def barrier(self, b: ir.IRBuilder) -> None:
        b.fence("release", BARRIER_SYNC_SCOPE)
        b.call(declare(b.module, BARRIER_INTRINSIC, ir.VoidType(), []), [])
        b.fence("acquire", BARRIER_SYNC_SCOPE)

    def lane_index(self, b: ir.IRBuilder) -> ir.Value:
        """This work-item's lane in its wavefront (mbcnt counts the lanes below it)."""
        every = ir.Constant(I32, -1)
        lo = b.call(
            declare(b.module, "llvm.amdgcn.mbcnt.lo", I32, [I32, I32]), [every, ir.Constant(I32, 0)]
        )
        if self.warp_size == 32:
            return lo
        return b.call(declare(b.module, "llvm.amdgcn.mbcnt.hi", I32, [I32, I32]), [every, lo])

    def shuffle_xor(self, b: ir.IRBuilder, value: ir.Value, lane_mask: int) -> ir.Value:
        source = b.xor(self.lane_index(b), ir.Constant(I32, lane_mask))
        address = b.shl(source, ir.Constant(I32, 2))
        bpermute = declare(b.module, "llvm.amdgcn.ds.bpermute", I32, [I32, I32])
        return b.call(bpermute, [address, value])

    def compile_object(self, llvm_ir: str) -> CompiledObject:
        """The kernels' optimized IR and AMDGPU object (not yet linked). Each kernel is told its
        largest work-group (``max_threads_per_block``): LLVM's default of 1024 work-items halves
        the registers a work-item may use, and large fusions then spill to the stack."""
        llvm_ir = with_flat_workgroup_size(llvm_ir, self.max_threads_per_block)
        compiled = compile_ir(
            llvm_ir, self.gfx, version=self.code_object_version, opt_level=self.opt_level
        )
        self.last_object = compiled
        return compiled

    def compile(self, llvm_ir: str) -> bytes:
        """The linked code object (HSACO) of the kernels in ``llvm_ir``."""
        compiled = self.compile_object(llvm_ir)
        linker = find_linker(self.code_object_version)
        return link_code_object(linker, compiled.object_code, name=f"{self.name} kernels")


_KERNEL_DEFINE = re.compile(r"^(define amdgpu_kernel [^\n{]*?)(\s*\{?)$", re.MULTILINE)


def with_flat_workgroup_size(ir_text: str, threads: int) -> str:
    """Every ``amdgpu_kernel`` definition of ``ir_text`` marked as launched with at most
    ``threads`` work-items (one that already says is left alone)."""

    def mark(match: re.Match) -> str:
        head, brace = match.groups()
        if "amdgpu-flat-work-group-size" in head:
            return match.group(0)
        return f"{head} {flat_workgroup_size_attribute(threads)}{brace}"

    return _KERNEL_DEFINE.sub(mark, ir_text)


def amdgpu_target(gfx: str = "gfx942", **options) -> AmdgpuTarget:
    return AmdgpuTarget(gfx, **options)
