"""Triangular solves and Cholesky for AMD GPUs: for gfx90a and gfx942, real and complex, as HLO
ops and as JAX's LAPACK calls, and JAX's threefry call: the substitution, factorization and
threefry kernels' code objects (hlort.testing.gpu_linalg_programs) link with ld.lld-19 and
validate with llvm-readelf-19, with no private segment (the accumulators' allocas promoted to
registers) and no spills. What the kernels compute is checked on the host simulator
(tests/gpu/test_{triangular_solve,cholesky,lapack_calls,threefry_call}_simulated.py)."""

import pytest

from hlort.testing.gpu_linalg_programs import (
    THREEFRY,
    cholesky_text,
    compile_one_kernel,
    potrf_text,
    solve_text,
    trsm_text,
)
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.compiler import check_program_code_object


def _links_and_validates(text, gfx, schedule):
    program, kernel = compile_one_kernel(text, AmdgpuTarget(gfx), schedule)
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    note = report.kernels[kernel.name]
    assert note.private_segment_size == 0 and not note.uses_dynamic_stack
    assert note.vgpr_spills == 0 and note.sgpr_spills == 0


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("left", [True, False])
def test_the_substitution_kernel_links_and_validates(llvm19_tools, gfx, dtype, left):
    _links_and_validates(solve_text(dtype, left=left), gfx, "triangular_solve")


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_the_cholesky_kernel_links_and_validates(llvm19_tools, gfx, dtype, lower):
    _links_and_validates(cholesky_text(dtype, lower), gfx, "cholesky")


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("dtype", ["f32", "f64", "c128"])
@pytest.mark.parametrize("lower", [True, False])
def test_the_potrf_call_links_and_validates(llvm19_tools, gfx, dtype, lower):
    _links_and_validates(potrf_text(dtype, lower), gfx, "cholesky")


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
@pytest.mark.parametrize("dtype", ["f64", "c64"])
@pytest.mark.parametrize("left", [True, False])
def test_the_trsm_call_links_and_validates(llvm19_tools, gfx, dtype, left):
    _links_and_validates(trsm_text(dtype, left), gfx, "triangular_solve")


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_the_threefry_call_links_and_validates(llvm19_tools, gfx):
    _links_and_validates(THREEFRY.replace("cu_", "hip_"), gfx, "threefry")
