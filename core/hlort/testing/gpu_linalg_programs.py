"""Triangular-solve and Cholesky programs for the GPU kernels' PTX and code-object checks
(hlort.codegen.gpu.triangular_schedule, cholesky_schedule), shared by the cuda and rocm plugins'
tests: batched solves and factorizations of a size that runs many k-steps, real or complex (a
complex solve takes the adjoint, which conjugates), as the HLO ops and as JAX's LAPACK custom
calls (``lapack_?potrf_ffi``, ``lapack_?trsm_ffi``: the same kernels), and JAX's threefry call."""

from __future__ import annotations

SOLVE = """HloModule ts
ENTRY main {{
  a = {t}[8,64,64] parameter(0)
  b = {t}[8,{b}] parameter(1)
  ROOT x = {t}[8,{b}] triangular-solve(a, b), left_side={left}, lower={lower},
    unit_diagonal=false, transpose_a={transpose}
}}
"""
CHOLESKY = """HloModule c
ENTRY main {{
  a = {t}[16,96,96] parameter(0)
  ROOT l = {t}[16,96,96] cholesky(a), lower={lower}
}}
"""

POTRF = """HloModule p
ENTRY main {{
  a = {t}[16,96,96] parameter(0)
  ROOT r = ({t}[16,96,96], s32[16]) custom-call(a), custom_call_target="lapack_{p}potrf_ffi",
    backend_config={{uplo = {uplo} : ui8}}, api_version=API_VERSION_TYPED_FFI
}}
"""
TRSM = """HloModule t
ENTRY main {{
  a = {t}[8,64,64] parameter(0)
  b = {t}[8,{b}] parameter(1)
  ROOT x = {t}[8,{b}] custom-call(a, b), custom_call_target="lapack_{p}trsm_ffi",
    backend_config={{diag = 78 : ui8, side = {side} : ui8, trans_x = {trans} : ui8,
    uplo = 76 : ui8}}, api_version=API_VERSION_TYPED_FFI
}}
"""
THREEFRY = """HloModule f
ENTRY main {
  k0 = u32[1024,1023] parameter(0)
  k1 = u32[1024,1023] parameter(1)
  c0 = u32[1024,1023] parameter(2)
  c1 = u32[1024,1023] parameter(3)
  ROOT r = (u32[1024,1023], u32[1024,1023]) custom-call(k0, k1, c0, c1),
    custom_call_target="cu_threefry2x32_ffi", api_version=API_VERSION_TYPED_FFI
}
"""
_LAPACK_PREFIX = {"f32": "s", "f64": "d", "c64": "c", "c128": "z"}


def solve_text(dtype: str, lower: bool = True, left: bool = True) -> str:
    """``op(a) x = b`` (or ``x op(a) = b``): op the adjoint for complex types, else transpose."""
    transpose = "ADJOINT" if dtype.startswith("c") else "TRANSPOSE"
    return SOLVE.format(
        t=dtype,
        b="64,32" if left else "32,64",
        left=str(left).lower(),
        lower=str(lower).lower(),
        transpose=transpose,
    )


def cholesky_text(dtype: str, lower: bool) -> str:
    return CHOLESKY.format(t=dtype, lower=str(lower).lower())


def potrf_text(dtype: str, lower: bool) -> str:
    """JAX's Cholesky call (f32, f64, c64, c128) on the lower (or upper) triangle."""
    return POTRF.format(t=dtype, p=_LAPACK_PREFIX[dtype], uplo=ord("L" if lower else "U"))


def trsm_text(dtype: str, left: bool = True) -> str:
    """JAX's trsm call: ``op(a) x = b`` (or ``x op(a) = b``), op the adjoint (``trans_x`` C)
    for complex types, else the transpose."""
    return TRSM.format(
        t=dtype,
        p=_LAPACK_PREFIX[dtype],
        b="64,32" if left else "32,64",
        side=ord("L" if left else "R"),
        trans=ord("C" if dtype.startswith("c") else "T"),
    )


def compile_one_kernel(text: str, target, schedule: str):
    """(program, its one kernel) compiled for ``target``; no host fallback, the kernel of
    ``schedule``."""
    from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
    from hlort.passes.default_pipeline import run_default_pipeline
    from hlort.text.parser import parse_module

    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, target, host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    (kernel,) = program.kernels
    assert kernel.schedule == schedule
    return program, kernel


__all__ = [
    "THREEFRY",
    "cholesky_text",
    "compile_one_kernel",
    "potrf_text",
    "solve_text",
    "trsm_text",
]
