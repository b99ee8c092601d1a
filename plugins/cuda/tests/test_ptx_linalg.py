"""Triangular solves and Cholesky on cuda, as HLO ops and as JAX's ``lapack_?trsm_ffi`` /
``lapack_?potrf_ffi`` calls: one kernel per instruction (no host fallback, real or complex), PTX
that ptxas accepts for sm_80 and sm_90 with no spills and no stack
(hlort.testing.gpu_linalg_programs). What the kernels compute is checked on the host simulator
(tests/gpu/test_triangular_solve_simulated.py, tests/gpu/test_cholesky_simulated.py,
tests/gpu/test_lapack_calls_simulated.py). Skipped with the reason when no ptxas is installed."""

import pytest

from hlort.testing.gpu_linalg_programs import (
    cholesky_text,
    compile_one_kernel,
    potrf_text,
    solve_text,
    trsm_text,
)
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())


def _assembles_without_spills(text, arch, schedule):
    program, kernel = compile_one_kernel(text, NvptxTarget(arch), schedule)
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_the_substitution_kernel_assembles_without_spills(arch, dtype, lower):
    _assembles_without_spills(solve_text(dtype, lower), arch, "triangular_solve")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_the_cholesky_kernel_assembles_without_spills(arch, dtype, lower):
    _assembles_without_spills(cholesky_text(dtype, lower), arch, "cholesky")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_the_potrf_call_assembles_without_spills(arch, dtype, lower):
    _assembles_without_spills(potrf_text(dtype, lower), arch, "cholesky")


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("left", [True, False])
def test_the_trsm_call_assembles_without_spills(arch, dtype, left):
    _assembles_without_spills(trsm_text(dtype, left), arch, "triangular_solve")
