"""hlort's tiled dot kernel on cuda: what the client plans without cuBLAS (kernels, never host
fallbacks, loops with dots included; HLORT_FALLBACK=error in the tests) and the PTX ptxas makes
of it for sm_80 and sm_90: accepted, no spills, no stack, the 64 x 16 and 16 x 64 slabs in
shared memory; complex products as separate multiplies and adds (``mul.rn``/``add.rn``, which
ptxas never fuses). What the kernel computes is checked on the host simulator
(tests/gpu/test_dot_kernel_simulated.py). Skipped with the reason when no ptxas is installed."""

import re

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.program import HostLoop, KernelLaunch, every_step
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.options import CompileOptions
from hlort.text.parser import parse_module
from hlort_cuda import cublas
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
ARCHS = ("sm_80", "sm_90")
# (lhs, rhs, out); f32 dots at 1024^2 x 512 and the narrow types accumulating in f32
DTYPES = [("f32", "f32", "f32"), ("f16", "f16", "f16"), ("bf16", "bf16", "f32")]
DTYPES += [("f64", "f64", "f64"), ("s8", "s8", "s32")]
DTYPES += [("c64", "c64", "c64"), ("c128", "c128", "c128"), ("pred", "pred", "pred")]
# bytes per slab element: the accumulation type (pred x pred -> pred: OR of ANDs in i32)
SLAB_BYTES = {"f64": 8, "c64": 8, "c128": 16}


def dot_text(lt, rt, ot, m=1024, k=512, n=1024):
    return f"""HloModule dot
ENTRY main {{
  a = {lt}[{m},{k}] parameter(0)
  b = {rt}[{k},{n}] parameter(1)
  ROOT d = {ot}[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
}}
"""


LOOP = """HloModule loop
cond {
  s = (s32[], f32[96,96]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[96,96]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[96,96] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  d = f32[96,96] dot(v, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[96,96] tanh(d)
  ROOT r = (s32[], f32[96,96]) tuple(j, t)
}
ENTRY main {
  x = f32[96,96] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[96,96]) tuple(zero, x)
  w = (s32[], f32[96,96]) while(init), condition=cond, body=body
  ROOT o = f32[96,96] get-tuple-element(w), index=1
}
"""


def compiled(text, arch="sm_90", gemm_library=False):
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    return compile_gpu_program(
        module, NvptxTarget(arch), host_loops=True, gemm_library=gemm_library
    )


@needs_ptxas
@pytest.mark.parametrize("k", [16, 512])  # one k-step (which once spilled f64) and many
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("lt,rt,ot", DTYPES, ids=["x".join(t) for t in DTYPES])
def test_dot_kernel_assembles_without_spills(arch, lt, rt, ot, k):
    program = compiled(dot_text(lt, rt, ot, k=k), arch)
    (kernel,) = program.kernels
    assert kernel.schedule == "dot" and not program.fallbacks
    ptx = program.binary.decode()
    assert ".shared" in ptx and "bar.sync" in ptx and "ld.shared" in ptx
    if lt.startswith("c"):  # the naive complex product, never contracted to an fma
        assert "fma." not in ptx and "mul.rn.f" in ptx and "sub.rn.f" in ptx
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    usage = result.kernels[kernel.name]
    assert not usage.spills and usage.stack_bytes == 0, usage
    assert usage.shared_bytes == 2 * 16 * 64 * SLAB_BYTES.get(lt, 4)
    # a 4 x 4 accumulator tile per thread; c128's is 64 doubles (158 registers on sm_90)
    assert usage.registers <= (168 if lt == "c128" else 128), usage


@needs_ptxas
def test_a_dot_with_batch_and_two_contracting_dims_assembles():
    text = """HloModule dot
ENTRY main {
  a = f32[6,4,3,50] parameter(0)
  b = f32[3,70,4,6] parameter(1)
  ROOT d = f32[6,50,70] dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={1,2},
    rhs_batch_dims={3}, rhs_contracting_dims={2,0}
}
"""
    program = compiled(text.replace(",\n    rhs", ", rhs"))
    assert [k.schedule for k in program.kernels] == ["dot"]
    result = run_ptxas(program.binary, "sm_90")
    assert result.accepted and result.spilling() == []


def test_with_cublas_row_major_real_and_complex_dots_are_gemm_calls_integer_ones_kernels():
    assert compiled(dot_text("f32", "f32", "f32"), gemm_library=True).stats()["library_calls"]
    integer = compiled(dot_text("s8", "s8", "s32", 64, 64, 64), gemm_library=True)
    assert [k.schedule for k in integer.kernels] == ["dot"] and not integer.fallbacks
    pred = compiled(dot_text("pred", "pred", "pred", 64, 64, 64), gemm_library=True)
    assert [k.schedule for k in pred.kernels] == ["dot"] and not pred.fallbacks
    for dtype in ("c64", "c128"):  # cgemm / zgemm past K = 64; in order (the kernel) up to it
        program = compiled(dot_text(dtype, dtype, dtype, 64, 65, 64), gemm_library=True)
        assert program.stats()["library_calls"] == 1 and not program.kernels
        assert program.steps[0].gemm.compute_dtype == dtype
        short = compiled(dot_text(dtype, dtype, dtype, 64, 64, 64), gemm_library=True)
        assert [k.schedule for k in short.kernels] == ["dot"] and not short.fallbacks


def test_client_without_cublas_plans_dot_kernels_in_loop_bodies_too(monkeypatch):
    """The cuda client asks whether cuBLAS loads; where not, every dot is the tiled kernel (and
    HLORT_FALLBACK=error, set for the tests, passes)."""
    from fake_gpu_client import FakeGpuClient

    from hlort.runtime.compile import run_core_passes
    from hlort_cuda.client import CudaCompiler

    class Client(CudaCompiler, FakeGpuClient):
        pass

    monkeypatch.setattr(cublas, "cublas_available", lambda: False)
    client = Client(None, {})
    try:
        for text in (dot_text("f32", "f32", "f32", 100, 70, 30), LOOP):
            module = run_core_passes(parse_module(text), CompileOptions(), client)
            program = client.compile(module, CompileOptions()).program
            assert not program.fallbacks and program.stats()["library_calls"] == 0
            names = {k.name: k.schedule for k in program.kernels}
            launched = [
                names[s.kernel] for s in every_step(program.steps) if isinstance(s, KernelLaunch)
            ]
            assert "dot" in launched
        loops = [s for s in program.steps if isinstance(s, HostLoop)]
        assert len(loops) == 1
    finally:
        client.close()


def test_kernel_names_the_dot_in_the_ptx():
    program = compiled(dot_text("f32", "f32", "f32", 64, 64, 64))
    assert re.search(rf"\.entry {program.kernels[0].name}\b", program.binary.decode())
