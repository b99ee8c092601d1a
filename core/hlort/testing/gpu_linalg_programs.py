"""Triangular-solve and Cholesky programs for the GPU kernels' PTX and code-object checks
(hlort.codegen.gpu.triangular_schedule, cholesky_schedule), shared by the cuda and rocm plugins'
tests: batched solves and factorizations of a size that runs many k-steps, real or complex (a
complex solve takes the adjoint, which conjugates)."""

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


__all__ = ["cholesky_text", "compile_one_kernel", "solve_text"]
