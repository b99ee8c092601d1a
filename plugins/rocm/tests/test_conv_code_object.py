"""The GPU direct convolution kernel (hlort.codegen.gpu.conv_schedule) for AMD GPUs: each
program of hlort.testing.gpu_conv_programs links with ld.lld-19 and validates with
llvm-readelf-19 for gfx90a and gfx942, with no private segment (the accumulator's alloca is
promoted to a register) and no spills. What the kernel computes is checked on the host
simulator (tests/gpu/test_conv_*_simulated.py). A large layer's im2col kernel (and, without
rocBLAS, the dot kernel after it) validates the same way."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_conv_programs import CONV_PROGRAMS, conv_module
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object

LAYER = """HloModule c
ENTRY main {{
  x = {t}[8,32,32,64] parameter(0)
  w = {t}[3,3,64,64] parameter(1)
  ROOT y = {t}[8,{s},{s},64] convolution(x, w), window={{{window}}}, dim_labels=b01f_01io->b01f
}}
"""
LAYERS = {
    "same": ("32", "size=3x3 pad=1_1x1_1"),
    "dilated": ("57", "size=3x3 pad=-1_-1x-1_-1 lhs_dilate=2x2 rhs_dilate=2x2"),
}


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("name", sorted(CONV_PROGRAMS))
def test_conv_code_object_links_and_validates(llvm19_tools, gfx, name):
    module = conv_module(name)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx))
    (kernel,) = program.kernels
    assert kernel.schedule == "convolution" and not program.fallbacks
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    note = report.kernels[kernel.name]
    assert note.private_segment_size == 0 and not note.uses_dynamic_stack
    assert note.vgpr_spills == 0 and note.sgpr_spills == 0


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("t", ["f32", "bf16"])
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_a_large_layer_is_im2col_and_a_gemm(llvm19_tools, gfx, t, layer):
    size, window = LAYERS[layer]
    module = parse_module(LAYER.format(t=t, s=size, window=window))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx), gemm_library=False)
    assert not program.fallbacks
    assert [k.schedule for k in program.kernels] == ["im2col", "dot"]
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    for kernel in program.kernels:
        note = report.kernels[kernel.name]
        assert note.private_segment_size == 0 and not note.uses_dynamic_stack
        assert note.vgpr_spills == 0 and note.sgpr_spills == 0
