"""complex64 math on NVIDIA GPUs stays in f32 (complex_math_f32.py, chosen because the GPU
targets' MathPolicy.f32_via_f64 is False): the PTX of a fusion of every complex64 op the
elemental emitter compiles (divide, abs, the transcendentals, power, atan2) has no f64
instruction, and ptxas accepts it for sm_80 and sm_90 without spills or stack. Accuracy is
measured on the CPU JIT with the same policy (plugins/cpu/tests/test_complex_math_f32.py)."""

import pytest

from hlort.testing.gpu_math_programs import C64_MATH_CHAIN, gpu_math_program
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


def test_the_nvptx_target_computes_c64_in_f32():
    assert NvptxTarget("sm_90").spec.math.f32_via_f64 is False


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_c64_math_kernel_has_no_f64_and_assembles(arch):
    program = gpu_math_program(C64_MATH_CHAIN, NvptxTarget(arch))
    ptx = program.binary.decode()
    assert ".f64" not in ptx
    assert "sin.approx" not in ptx and "ex2.approx" not in ptx and "lg2.approx" not in ptx
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == []
    for kernel in program.kernels:
        assert result.kernels[kernel.name].stack_bytes == 0
