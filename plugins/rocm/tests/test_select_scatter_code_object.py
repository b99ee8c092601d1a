"""The GPU select-and-scatter kernel (hlort.codegen.gpu.select_scatter_schedule) for AMD GPUs: each
program of hlort.testing.gpu_select_scatter_programs links with ld.lld-19 and validates with
llvm-readelf-19 for gfx90a and gfx942, with no private segment (the allocas are promoted to
registers) and no spills. What the kernel computes is checked on the host simulator
(tests/gpu/test_select_scatter_*_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_select_scatter_programs import SELECT_SCATTER_PROGRAMS, select_scatter_text
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("name", sorted(SELECT_SCATTER_PROGRAMS))
def test_select_and_scatter_code_object_links_and_validates(llvm19_tools, gfx, name):
    module = parse_module(select_scatter_text(name))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx))
    (kernel,) = program.kernels
    assert kernel.schedule == "select_and_scatter" and not program.fallbacks
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    note = report.kernels[kernel.name]
    assert note.private_segment_size == 0 and not note.uses_dynamic_stack
    assert note.vgpr_spills == 0 and note.sgpr_spills == 0
