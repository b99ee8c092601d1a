"""The GPU direct convolution kernel (hlort.codegen.gpu.conv_schedule) as PTX: each program of
hlort.testing.gpu_conv_programs assembles with ptxas for sm_80 and sm_90 without spills or
stack. What the kernel computes is checked on the host simulator
(tests/gpu/test_conv_*_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_conv_programs import CONV_PROGRAMS, conv_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


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
