"""f32 transcendentals on NVIDIA GPUs stay in f32 (MathPolicy.f32_via_f64 is False on GPU
targets; float_math_f32.py): the PTX of a fusion of every such op has no f64 instruction, and
ptxas accepts it for sm_80 and sm_90 without spills or stack. Accuracy is measured on the CPU
JIT (plugins/cpu/tests/test_transcendental_ulp_f32.py) and on the host simulator
(tests/gpu/test_conformance_simulated.py)."""

import pytest

from hlort.testing.gpu_math_programs import F32_MATH_CHAIN, gpu_math_program
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


def test_the_nvptx_target_keeps_f32_math_in_f32():
    assert NvptxTarget("sm_80").spec.math.f32_via_f64 is False


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_f32_math_kernel_has_no_f64_and_assembles(arch):
    program = gpu_math_program(F32_MATH_CHAIN, NvptxTarget(arch))
    assert [k.schedule for k in program.kernels] == ["loop"]
    ptx = program.binary.decode()
    assert ".f64" not in ptx
    assert (
        "sin.approx" not in ptx and "ex2.approx" not in ptx
    )  # our own code, not SFU approximations
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == []
    assert result.kernels[program.kernels[0].name].stack_bytes == 0
