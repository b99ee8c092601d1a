"""What differs between AMD GPUs and the other targets of the shared emitter, as data.

The GPU kernel schedules (``hlort.codegen.gpu``) are shared by CUDA and ROCm; everything AMDGPU
about them comes from here: the triple, the kernel calling convention, the address spaces, the
wavefront width, the work-item intrinsics and the code-object version module flag. Values are
LLVM's (AMDGPUUsage): address space 1 global, 3 LDS ("shared"), 4 constant, 5 private (stack);
kernels are ``amdgpu_kernel`` functions whose pointer arguments live in address space 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hlort.errors import InvalidArgument

TRIPLE = "amdgcn-amd-amdhsa"
CALLING_CONVENTION = "amdgpu_kernel"
RELOC = "pic"  # a code object is a shared object: position-independent, linked by ld.lld -shared
CODE_MODEL = "default"

ADDRESS_SPACE_GLOBAL = 1
ADDRESS_SPACE_SHARED = 3  # LDS, per work-group
ADDRESS_SPACE_CONSTANT = 4
ADDRESS_SPACE_PRIVATE = 5  # scratch: what "private segment" in the code object's notes counts

CODE_OBJECT_VERSIONS = (4, 5, 6)
DEFAULT_CODE_OBJECT_VERSION = 5  # loaded by every ROCm since 5.x; v6 needs ROCm 6.2+ and lld 19
CODE_OBJECT_FLAG = "amdhsa_code_object_version"  # module flag value: version * 100

# work-item, work-group and barrier intrinsics (LLVM's AMDGPU names), per dimension x/y/z
THREAD_ID_INTRINSIC = "llvm.amdgcn.workitem.id.{axis}"
BLOCK_ID_INTRINSIC = "llvm.amdgcn.workgroup.id.{axis}"
BARRIER_INTRINSIC = "llvm.amdgcn.s.barrier"
BARRIER_SYNC_SCOPE = "workgroup"  # fences around s.barrier make LDS writes visible


@dataclass(frozen=True)
class GfxTarget:
    """One AMD GPU architecture hlort compiles for (``--target gfx942``)."""

    name: str  # the LLVM CPU name and the HIP device's gcnArchName prefix
    products: str
    wavefront_size: int
    lds_bytes_per_workgroup: int
    max_workgroup_size: int = 1024

    @property
    def isa_name(self) -> str:
        """How the code object's notes name the target (``amdhsa.target``)."""
        return f"{TRIPLE}--{self.name}"


GFX_TARGETS: dict[str, GfxTarget] = {
    t.name: t
    for t in (
        GfxTarget("gfx90a", "Instinct MI210/MI250/MI250X (CDNA2)", 64, 64 << 10),
        GfxTarget("gfx942", "Instinct MI300A/MI300X/MI325X (CDNA3)", 64, 64 << 10),
    )
}
DEFAULT_GFX_TARGET = "gfx942"

_ARCH_NAME = re.compile(r"^(gfx[0-9a-f]+)")


def gfx_target(name: str) -> GfxTarget:
    """The target named ``name`` (``gfx942``, or a HIP arch name like ``gfx942:sramecc+:xnack-``);
    INVALID_ARGUMENT listing the known ones otherwise."""
    match = _ARCH_NAME.match(str(name).strip().lower())
    target = GFX_TARGETS.get(match.group(1)) if match else None
    if target is None:
        known = ", ".join(f"{t.name} ({t.products})" for t in GFX_TARGETS.values())
        raise InvalidArgument(
            f"unknown AMD GPU target {name!r}; hlort-rocm compiles for {known}; "
            f"pass one of them as --target / target_options['target']"
        )
    return target


def code_object_version(value: object) -> int:
    """The code object version asked for (4, 5 or 6); INVALID_ARGUMENT otherwise."""
    try:
        version = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        version = -1
    if version not in CODE_OBJECT_VERSIONS:
        raise InvalidArgument(
            f"code_object_version={value!r} is not one of "
            f"{', '.join(map(str, CODE_OBJECT_VERSIONS))}"
        )
    return version


def flat_workgroup_size_attribute(block_size: int) -> str:
    """The function attribute that tells LLVM a kernel's largest work-group (fewer registers
    reserved than for the default 1024)."""
    return f'"amdgpu-flat-work-group-size"="1,{int(block_size)}"'
