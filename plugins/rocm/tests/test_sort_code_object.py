"""The GPU sort and top-k kernels (hlort.codegen.gpu.sort_schedule) for AMD GPUs: each program
of hlort.testing.gpu_sort_programs links with ld.lld-19 and validates with llvm-readelf-19 for
gfx90a and gfx942, with no private segment (stack) and no spills, the permutation in the group
segment (LDS) unless the rows are too long for it. What the kernels compute is checked on the
host simulator with 64-wide wavefronts (tests/gpu/test_sort_*_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_sort_programs import SORT_PROGRAMS
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("name", sorted(SORT_PROGRAMS))
def test_sort_code_object_links_and_validates(llvm19_tools, gfx, name):
    text, schedule, _strategy = SORT_PROGRAMS[name]
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx))
    (kernel,) = program.kernels
    assert kernel.schedule == schedule and not program.fallbacks
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    note = report.kernels[kernel.name]
    assert note.private_segment_size == 0 and not note.uses_dynamic_stack
    assert note.vgpr_spills == 0 and note.sgpr_spills == 0
    assert (note.group_segment_size > 0) == schedule.endswith("shared")
