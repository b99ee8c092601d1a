"""complex64 math on AMD GPUs stays in f32 (complex_math_f32.py; the GPU targets'
MathPolicy.f32_via_f64 is False): the assembly of a fusion of every complex64 op the elemental
emitter compiles has no f64 instruction (no linker needed), and where ld.lld is present its code
object validates for gfx90a and gfx942 with no spills."""

import re

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_rocm.amdgpu_kernel_target import AmdgpuTarget
from hlort_rocm.code_object import emit_assembly
from hlort_rocm.compiler import check_program_code_object

_N = 1024
_UNARY = ["exponential", "log", "sqrt", "sine", "cosine", "tan", "tanh", "sign"]
_UNARY += ["exponential-minus-one", "log-plus-one", "rsqrt", "logistic", "cbrt"]


def c64_math_chain() -> str:
    """Every complex64 op of the elemental emitter's math, chained into one fusion (the same
    program as plugins/cuda/tests/test_ptx_math_c64.py's)."""
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


class _Unlinked(AmdgpuTarget):
    """Keeps the object and its assembly instead of linking (no ld.lld needed)."""

    def compile(self, llvm_ir: str) -> bytes:
        compiled = self.compile_object(llvm_ir)
        self.assembly = emit_assembly(compiled)
        return compiled.object_code


def _program(target: AmdgpuTarget):
    module = parse_module(c64_math_chain())
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, target)
    assert program.kernels and not program.fallbacks
    return program


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_c64_math_assembly_has_no_f64(gfx):
    target = _Unlinked(gfx)
    _program(target)
    code = target.assembly
    assert re.findall(r"\bv_\w+_f64\b", code) == []
    assert re.findall(r"\bv_\w+_f32\b", code)


@pytest.mark.parametrize("gfx", ["gfx90a", "gfx942"])
def test_c64_math_code_object_validates(llvm19_tools, gfx):
    program = _program(AmdgpuTarget(gfx))
    report = check_program_code_object(program, 5)
    assert report.ok, report.problems
    for kernel in program.kernels:
        note = report.kernels[kernel.name]
        assert note.vgpr_spills == 0 and note.sgpr_spills == 0
