"""rng-bit-generator and JAX's threefry custom call on cuda: one kernel each (no host fallback)
whose PTX ptxas accepts for sm_80 and sm_90 with no spills and no stack, for both generators and
32/64-bit outputs. What they compute is checked bit for bit on the host simulator
(tests/gpu/test_rng_simulated.py, tests/gpu/test_threefry_call_simulated.py). Skipped with the
reason when no ptxas is installed."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_linalg_programs import THREEFRY, compile_one_kernel
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas


@pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("algorithm", ["rng_three_fry", "rng_philox"])
@pytest.mark.parametrize("bits", ["u32[1024,1023]", "u64[4096]"])
def test_the_rng_kernel_assembles_without_spills(arch, algorithm, bits):
    state = 2 if algorithm == "rng_three_fry" else 3
    module = parse_module(
        f"HloModule r\nENTRY main {{\n  s = u64[{state}] parameter(0)\n"
        f"  ROOT r = (u64[{state}], {bits}) rng-bit-generator(s), algorithm={algorithm}\n}}\n"
    )
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch), host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    (kernel,) = program.kernels
    assert kernel.schedule == "rng"
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage


@pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_the_threefry_call_kernel_assembles_without_spills(arch):
    program, kernel = compile_one_kernel(THREEFRY, NvptxTarget(arch), "threefry")
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage
