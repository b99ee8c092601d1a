"""f32 transcendentals on AMD GPUs stay in f32 (MathPolicy.f32_via_f64 is False on GPU targets;
float_math_f32.py): the assembly of a fusion of every such op has no f64 instruction (no linker
needed), and its code object links and validates for gfx90a and gfx942 with no stack and no
spills."""

import re
import subprocess
import tempfile
from pathlib import Path

import pytest
from unlinked_target import UnlinkedTarget

from hlort.testing.gpu_math_programs import F32_MATH_CHAIN, gpu_math_program
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object


def _program(target: AmdgpuTarget):
    program = gpu_math_program(F32_MATH_CHAIN, target)
    assert [k.schedule for k in program.kernels] == ["loop"]
    return program


def test_the_amdgpu_target_keeps_f32_math_in_f32():
    assert AmdgpuTarget("gfx942").spec.math.f32_via_f64 is False


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_f32_math_assembly_has_no_f64(gfx):
    target = UnlinkedTarget(gfx)
    _program(target)
    code = target.assembly
    assert "v_sin_f32" not in code  # our own code, not the hardware approximation
    assert re.findall(r"\bv_\w+_f64\b", code) == []
    assert re.findall(r"\bv_\w+_f32\b", code)


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_f32_math_code_object_validates_without_f64(llvm19_tools, gfx):
    program = _program(AmdgpuTarget(gfx))
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    note = report.kernels[program.kernels[0].name]
    assert note.private_segment_size == 0 and note.vgpr_spills == 0 and note.sgpr_spills == 0
    _linker, _readelf, objdump = llvm19_tools
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.o"
        path.write_bytes(program.binary)
        code = subprocess.run(
            [objdump.path, "-d", f"--mcpu={gfx}", str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    assert "v_sin_f32" not in code  # our own code, not the hardware approximation
    assert re.findall(r"\bv_\w+_f64\b", code) == []
    assert re.findall(r"\bv_\w+_f32\b", code)
