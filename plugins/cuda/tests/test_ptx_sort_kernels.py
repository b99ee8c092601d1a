"""The GPU sort and top-k kernels (hlort.codegen.gpu.sort_schedule) as PTX: each program of
hlort.testing.gpu_sort_programs assembles with ptxas for sm_80 and sm_90 without spills or
stack, its permutation in shared memory (4 bytes per padded element) unless the rows are too
long for it. What the kernels compute is checked on the host simulator
(tests/gpu/test_sort_*_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.gpu_sort_programs import SORT_PROGRAMS
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", sorted(SORT_PROGRAMS))
def test_sort_kernel_assembles_without_spills(name, arch):
    text, schedule, _strategy = SORT_PROGRAMS[name]
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch))
    (kernel,) = program.kernels
    assert kernel.schedule == schedule and not program.fallbacks
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage
    n = module.entry.parameters[0].shape.dims[-1 if "leading" not in name else 0]
    padded = 1 << (n - 1).bit_length()
    assert usage.shared_bytes == (4 * padded if schedule.endswith("shared") else 0)
    assert "bar.sync" in program.binary.decode()
