"""Triangular solves and Cholesky for AMD GPUs: for gfx90a and gfx942, real and complex, the
substitution and factorization kernels' code objects link with ld.lld-19 and validate with
llvm-readelf-19, with no private segment (the accumulators' allocas promoted to registers) and
no spills. What the kernels compute is checked on the host simulator
(tests/gpu/test_triangular_solve_simulated.py, tests/gpu/test_cholesky_simulated.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object

SOLVE = """HloModule ts
ENTRY main {{
  a = {t}[8,64,64] parameter(0)
  b = {t}[8,32,64] parameter(1)
  ROOT x = {t}[8,32,64] triangular-solve(a, b), left_side=false, lower=true,
    unit_diagonal=false, transpose_a={transpose}
}}
"""
CHOLESKY = """HloModule c
ENTRY main {{
  a = {t}[16,96,96] parameter(0)
  ROOT l = {t}[16,96,96] cholesky(a), lower={lower}
}}
"""


def _check(llvm19_tools, text, gfx, schedule):
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, AmdgpuTarget(gfx), host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    (kernel,) = program.kernels
    assert kernel.schedule == schedule
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    note = report.kernels[kernel.name]
    assert note.private_segment_size == 0 and not note.uses_dynamic_stack
    assert note.vgpr_spills == 0 and note.sgpr_spills == 0


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
def test_the_substitution_kernel_links_and_validates(llvm19_tools, gfx, dtype):
    transpose = "ADJOINT" if dtype.startswith("c") else "TRANSPOSE"
    text = SOLVE.format(t=dtype, transpose=transpose)
    _check(llvm19_tools, text, gfx, "triangular_solve")


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", ["true", "false"])
def test_the_cholesky_kernel_links_and_validates(llvm19_tools, gfx, dtype, lower):
    _check(llvm19_tools, CHOLESKY.format(t=dtype, lower=lower), gfx, "cholesky")
