"""complex64 math on AMD GPUs stays in f32 (complex_math_f32.py; the GPU targets'
MathPolicy.f32_via_f64 is False): the assembly of a fusion of every complex64 op the elemental
emitter compiles has no f64 instruction (no linker needed), and where ld.lld is present its code
object validates for gfx90a and gfx942 with no spills."""

import re

import pytest
from unlinked_target import UnlinkedTarget

from hlort.testing.gpu_math_programs import C64_MATH_CHAIN, gpu_math_program
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object


def _program(target: AmdgpuTarget):
    return gpu_math_program(C64_MATH_CHAIN, target)


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_c64_math_assembly_has_no_f64(gfx):
    target = UnlinkedTarget(gfx)
    _program(target)
    code = target.assembly
    assert re.findall(r"\bv_\w+_f64\b", code) == []
    assert re.findall(r"\bv_\w+_f32\b", code)


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_c64_math_code_object_validates(llvm19_tools, gfx):
    program = _program(AmdgpuTarget(gfx))
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    for kernel in program.kernels:
        note = report.kernels[kernel.name]
        assert note.vgpr_spills == 0 and note.sgpr_spills == 0
