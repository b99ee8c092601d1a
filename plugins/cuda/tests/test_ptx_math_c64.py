"""complex64 math on NVIDIA GPUs stays in f32 (complex_math_f32.py, chosen because the GPU
targets' MathPolicy.f32_via_f64 is False): the PTX of a fusion of every complex64 op the
elemental emitter compiles (divide, abs, the transcendentals, power, atan2) has no f64
instruction, and ptxas accepts it for sm_80 and sm_90 without spills or stack. Accuracy is
measured on the CPU JIT with the same policy (plugins/cpu/tests/test_complex_math_f32.py)."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())

_N = 1024
_UNARY = ["exponential", "log", "sqrt", "sine", "cosine", "tan", "tanh", "sign"]
_UNARY += ["exponential-minus-one", "log-plus-one", "rsqrt", "logistic", "cbrt"]


def c64_math_chain() -> str:
    """Every complex64 op of the elemental emitter's math, chained into one fusion."""
    c = f"c64[{_N}]"
    lines = ["HloModule c64_math_chain", "ENTRY main {"]
    lines += [f"  x = {c} parameter(0)", f"  y = {c} parameter(1)"]
    lines += [f"  q = {c} divide(x, y)", f"  p = {c} power(q, y)", f"  t = {c} atan2(p, x)"]
    prev = "t"
    for i, op in enumerate(_UNARY):
        lines.append(f"  u{i} = {c} {op}({prev})")
        prev = f"u{i}"
    lines += [f"  m = f32[{_N}] abs({prev})", f"  mz = {c} convert(m)"]
    lines += [f"  ROOT r = {c} multiply(mz, {prev})", "}", ""]
    return "\n".join(lines)


def test_the_nvptx_target_computes_c64_in_f32():
    assert NvptxTarget("sm_90").spec.math.f32_via_f64 is False


@needs_ptxas
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_c64_math_kernel_has_no_f64_and_assembles(arch):
    module = parse_module(c64_math_chain())
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch))
    assert program.kernels and not program.fallbacks
    ptx = program.binary.decode()
    assert ".f64" not in ptx
    assert "sin.approx" not in ptx and "ex2.approx" not in ptx and "lg2.approx" not in ptx
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == []
    for kernel in program.kernels:
        assert result.kernels[kernel.name].stack_bytes == 0
