"""Triangular solves and Cholesky on cuda: one kernel per instruction (no host fallback, real or
complex), PTX that ptxas accepts for sm_80 and sm_90 with no spills and no stack. What the
kernels compute is checked on the host simulator (tests/gpu/test_triangular_solve_simulated.py,
tests/gpu/test_cholesky_simulated.py). Skipped with the reason when no ptxas is installed."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

SOLVE = """HloModule ts
ENTRY main {{
  a = {t}[8,64,64] parameter(0)
  b = {t}[8,64,32] parameter(1)
  ROOT x = {t}[8,64,32] triangular-solve(a, b), left_side=true, lower={lower},
    unit_diagonal=false, transpose_a={transpose}
}}
"""


CHOLESKY = """HloModule c
ENTRY main {{
  a = {t}[16,96,96] parameter(0)
  ROOT l = {t}[16,96,96] cholesky(a), lower={lower}
}}
"""

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


def _assembles_without_spills(text, arch, schedule):
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch), host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    (kernel,) = program.kernels
    assert kernel.schedule == schedule
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", ["true", "false"])
def test_the_substitution_kernel_assembles_without_spills(arch, dtype, lower):
    transpose = "ADJOINT" if dtype.startswith("c") else "TRANSPOSE"
    text = SOLVE.format(t=dtype, lower=lower, transpose=transpose)
    _assembles_without_spills(text, arch, "triangular_solve")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", ["true", "false"])
def test_the_cholesky_kernel_assembles_without_spills(arch, dtype, lower):
    _assembles_without_spills(CHOLESKY.format(t=dtype, lower=lower), arch, "cholesky")
