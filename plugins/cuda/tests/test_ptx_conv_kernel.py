"""The GPU direct convolution kernel (hlort.codegen.gpu.conv_schedule) as PTX: each program of
hlort.testing.gpu_conv_programs assembles with ptxas for sm_80 and sm_90 without spills or
stack; so do a large layer's im2col kernel (im2col_schedule.py) and, without cuBLAS, the dot
kernel after it, for f32, f16 and bf16. What the kernels compute is checked on the host
simulator (tests/gpu/test_conv_*_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_conv_programs import CONV_PROGRAMS, conv_module
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())

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


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(CONV_PROGRAMS))
def test_conv_kernel_assembles_without_spills(name, arch):
    module = conv_module(name)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch))
    (kernel,) = program.kernels
    assert kernel.schedule == "convolution" and not program.fallbacks
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("t", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("gemm_library", [True, False])
def test_a_large_layer_is_im2col_and_a_gemm(arch, t, layer, gemm_library):
    size, window = LAYERS[layer]
    module = parse_module(LAYER.format(t=t, s=size, window=window))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch), gemm_library=gemm_library)
    assert not program.fallbacks
    assert [k.schedule for k in program.kernels] == ["im2col"] + ([] if gemm_library else ["dot"])
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    for kernel in program.kernels:
        usage = result.kernels[kernel.name]
        assert not usage.spills and usage.stack_bytes == 0, usage
