"""Narrow-float variadic reduces with a selecting reducer (the conformance suite's argmin over
f16, bf16 and float8 values) are loop kernels on cuda, no longer host fallbacks: PTX ptxas
accepts for sm_80 and sm_90 with no spills and no stack. What they compute is checked on the
host simulator (tests/gpu/test_reduce_simulated.py). Skipped with the reason without ptxas."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.op_case import all_cases
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
CASES = [c for c in all_cases() if c.op == "reduce" and c.id.endswith("-argmin-variadic")]
CASES = [c for c in CASES if any(t in c.id for t in ("f16", "bf16", "f8"))]


def test_the_narrow_argmin_cases_exist():
    assert len(CASES) >= 4


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_narrow_argmin_assembles_without_spills(case, arch):
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch))
    assert not program.fallbacks, program.fallback_summary()
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    for kernel in program.kernels:
        usage = result.kernels[kernel.name]
        assert not usage.spills and usage.stack_bytes == 0, usage
