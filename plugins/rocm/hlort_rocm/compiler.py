"""An optimized module -> a GpuProgram for one AMD GPU target; no GPU and no ROCm needed.

The kernel schedules are the shared ones (``hlort.codegen.gpu.compiler``), lowered through
:class:`AmdgpuTarget` to a linked code object. Dots become rocBLAS gemm calls; on a machine
whose runtime has no rocBLAS they run hlort's own tiled dot kernel (hlort.codegen.gpu.
dot_schedule, wavefronts of 64) instead, in while-loop bodies too, so no dot falls back to the
host for want of rocBLAS. A compile-only client keeps the gemm calls: the program is for the
machine that will run it.

Target options (``CompileOptions.target_options``):

``code_object_version``  4, 5 (default) or 6: what the code object's loader must support
``opt_level``            0-3 (default 3), LLVM's optimization level
``validate``             True: check the code object with llvm-readelf/objdump 19 at compile
                         time (every kernel's descriptor, argument layout, no stack use)
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from hlort.codegen.gpu.compiler import compile_gpu_program
from hlort.codegen.gpu.program import (
    GpuProgram,
    KernelLaunch,
    every_step,
)
from hlort.errors import Internal, InvalidArgument
from hlort.ir.module import Module
from hlort.plugin.options import CompileOptions
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.amdgpu_target import (
    DEFAULT_CODE_OBJECT_VERSION,
    code_object_version,
    gfx_target,
)
from hlort_rocm.code_object_check import (
    CodeObjectReport,
    CodeObjectToCheck,
    explicit_args,
    validate_code_objects,
)


@dataclass(frozen=True)
class RocmTargetOptions:
    code_object_version: int = DEFAULT_CODE_OBJECT_VERSION
    opt_level: int = 3
    validate: bool = False


def rocm_target_options(options: dict[str, Any]) -> RocmTargetOptions:
    """The plugin's target options, checked; INVALID_ARGUMENT naming an unknown or bad one."""
    known = {"code_object_version", "opt_level", "validate"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise InvalidArgument(
            f"unknown rocm target option(s) {unknown}; the rocm platform takes {sorted(known)}"
        )
    level = options.get("opt_level", 3)
    if isinstance(level, bool) or level not in (0, 1, 2, 3):
        raise InvalidArgument(f"rocm target option opt_level={level!r} must be 0, 1, 2 or 3")
    validate = options.get("validate", False)
    if not isinstance(validate, bool):
        raise InvalidArgument(f"rocm target option validate={validate!r} must be true or false")
    version = code_object_version(options.get("code_object_version", DEFAULT_CODE_OBJECT_VERSION))
    return RocmTargetOptions(version, int(level), validate)


def compile_rocm_program(
    module: Module, options: CompileOptions, target: str, *, gemm_library: bool
) -> GpuProgram:
    """Compile ``module`` (optimized, scheduled) for the gfx ``target``."""
    opts = rocm_target_options(dict(options.target_options))
    amdgpu = AmdgpuTarget(target, code_object=opts.code_object_version, opt_level=opts.opt_level)
    # while loops run on the host with device bodies (as on cuda); without rocBLAS every dot,
    # in a loop body or not, is the tiled dot kernel
    program = compile_gpu_program(
        module,
        amdgpu,
        donated=tuple(options.donated_arguments),
        host_loops=True,
        gemm_library=gemm_library,
    )
    for step in every_step(program.steps):  # each kernel told LLVM its largest work-group
        if isinstance(step, KernelLaunch) and prod(step.block) > amdgpu.max_threads_per_block:
            raise Internal(
                f"rocm: kernel {step.kernel} launches {prod(step.block)} work-items, "
                f"more than the {amdgpu.max_threads_per_block} it was compiled "
                f"for"
            )
    if opts.validate and program.kernels:
        check_program_code_object(program, opts.code_object_version).raise_problems(
            f"rocm: {module.name} for {target}"
        )
    return program


def code_object_to_check(
    program: GpuProgram, version: int, no_stack: bool = True
) -> CodeObjectToCheck:
    """What a program's code object must hold: its kernels, each in the kernel ABI (one global
    pointer per argument), and (``no_stack``) no private segment."""
    expected = {
        k.name: explicit_args([8] * k.num_args, ["global_buffer"] * k.num_args)
        for k in program.kernels
    }
    return CodeObjectToCheck(
        program.binary, gfx_target(program.target), version, expected, no_stack
    )


def check_program_code_object(program: GpuProgram, version: int) -> CodeObjectReport:
    """Validate a program's code object with llvm-readelf/objdump; the report lists what does
    not match."""
    return validate_code_objects([code_object_to_check(program, version)])[0]
