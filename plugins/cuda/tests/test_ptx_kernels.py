"""The GPU schedules lowered to PTX and assembled by ptxas, with no GPU: every seed kernel is one
kernel of the expected schedule, accepted for sm_80 and sm_90, without spills, with its
intermediates in registers. Skipped with the reason when no ptxas is installed."""

import re

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.program import GpuProgram, HostFallback, KernelLaunch, LibraryCall
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.testing.row_programs import REDUCERS, seed_full_sum, seed_row_sum, softmax_rows
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

needs_ptxas = pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
ARCHS = ("sm_80", "sm_90")
SEED = seed_row_sum(4096, 16384)
SOFTMAX = softmax_rows(4096, 1024)
FULL_SEED = seed_full_sum(1 << 26)


LAYERNORM = (
    "HloModule layernorm\n"
    + REDUCERS
    + """
ENTRY main {
  x = f32[4096,1024] parameter(0)
  zero = f32[] constant(0)
  n = f32[] constant(1024)
  s = f32[4096] reduce(x, zero), dimensions={1}, to_apply=add_f
  nb = f32[4096] broadcast(n), dimensions={}
  mean = f32[4096] divide(s, nb)
  mb = f32[4096,1024] broadcast(mean), dimensions={0}
  d = f32[4096,1024] subtract(x, mb)
  d2 = f32[4096,1024] multiply(d, d)
  v = f32[4096] reduce(d2, zero), dimensions={1}, to_apply=add_f
  var = f32[4096] divide(v, nb)
  eps = f32[] constant(1e-5)
  eb = f32[4096] broadcast(eps), dimensions={}
  ve = f32[4096] add(var, eb)
  r = f32[4096] rsqrt(ve)
  rb = f32[4096,1024] broadcast(r), dimensions={0}
  ROOT o = f32[4096,1024] multiply(d, rb)
}
"""
)


ELEMENTWISE = """HloModule fused_elementwise
ENTRY main {
  x = f32[67108864] parameter(0)
  y = f32[67108864] parameter(1)
  z = f32[67108864] parameter(2)
  yz = f32[67108864] multiply(y, z)
  ROOT s = f32[67108864] add(x, yz)
}
"""

TRANSPOSE = """HloModule transpose
ENTRY main {
  x = f32[1000,3000] parameter(0)
  ROOT t = f32[3000,1000] transpose(x), dimensions={1,0}
}
"""

MATMUL_EPILOGUE = (
    "HloModule mlp\n"
    + REDUCERS
    + """
ENTRY main {
  a = f32[256,512] parameter(0)
  w = f32[512,1024] parameter(1)
  bias = f32[1024] parameter(2)
  d = f32[256,1024] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[256,1024] broadcast(bias), dimensions={1}
  s = f32[256,1024] add(d, bb)
  zero = f32[] constant(0)
  zb = f32[256,1024] broadcast(zero), dimensions={}
  ROOT r = f32[256,1024] maximum(s, zb)
}
"""
)


def _compile(text: str, arch: str) -> GpuProgram:
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    return compile_gpu_program(module, NvptxTarget(arch))


def _body(ptx: str, kernel: str) -> str:
    start = ptx.index(f".entry {kernel}(")
    return ptx[start : ptx.index("\n}\n", start)]


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_seed_reduce_sum_is_one_kernel_in_registers(arch):
    program = _compile(SEED, arch)
    assert [k.schedule for k in program.kernels] == ["row_reduce"]
    assert [type(s) for s in program.steps] == [KernelLaunch] and not program.fallbacks
    launch = program.steps[0]
    assert launch.grid == (4096, 1, 1) and launch.block[0] % 32 == 0
    ptx = program.binary.decode()
    body = _body(ptx, program.kernels[0].name)
    assert f".target {arch}" in ptx
    assert "shfl.sync.bfly.b32" in body and "bar.sync" in body
    # the three inputs are read from global memory, the only global store is the row's sum,
    # and nothing goes to local memory: x + y*z stays in registers
    loads = re.findall(r"ld\.global(?:\.nc)?\.\S+", body)
    assert loads and len(loads) % 3 == 0
    assert len(re.findall(r"st\.global", body)) == 1
    assert "st.local" not in body and "ld.local" not in body
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == [] and result.kernels[program.kernels[0].name].stack_bytes == 0


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
def test_full_reduction_seed_is_one_kernel_over_many_blocks(arch):
    program = _compile(FULL_SEED, arch)
    assert [k.schedule for k in program.kernels] == ["split_row_reduce"]
    assert len(program.steps) == 1 and program.steps[0].grid[0] >= 132  # every SM of an H200
    counters = [
        program.slot(s) for s in program.steps[0].args if program.slot(s).kind == "constant"
    ]
    assert len(counters) == 1 and counters[0].constant == bytes(counters[0].size)
    body = _body(program.binary.decode(), program.kernels[0].name)
    assert "atom.global.add" in body and "shfl.sync.bfly.b32" in body
    assert "st.local" not in body
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == []


@needs_ptxas
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("text", [SOFTMAX, LAYERNORM], ids=["softmax", "layernorm"])
def test_softmax_and_layernorm_are_one_row_kernel_without_spills(text, arch):
    program = _compile(text, arch)
    assert [k.schedule for k in program.kernels] == ["row_reduce"], program.kernels
    assert not program.fallbacks and len(program.steps) == 1
    body = _body(program.binary.decode(), program.kernels[0].name)
    assert "st.local" not in body
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert result.spilling() == []


@needs_ptxas
def test_elementwise_is_a_grid_stride_loop_of_128_bit_accesses():
    program = _compile(ELEMENTWISE, "sm_90")
    assert [k.schedule for k in program.kernels] == ["loop"]
    launch = program.steps[0]
    body = _body(program.binary.decode(), program.kernels[0].name)
    assert len(re.findall(r"ld\.global(?:\.nc)?\.v4\.(?:b32|f32|u32)", body)) >= 3
    assert re.search(r"st\.global\.v4\.(?:b32|f32|u32)", body)
    assert launch.grid[0] * launch.block[0] < 67108864 // 4  # a grid-stride loop, not 1:1
    assert run_ptxas(program.binary, "sm_90").accepted


@needs_ptxas
def test_transpose_goes_through_shared_memory_tiles():
    program = _compile(TRANSPOSE, "sm_80")
    assert [k.schedule for k in program.kernels] == ["transpose"]
    body = _body(program.binary.decode(), program.kernels[0].name)
    assert "st.shared" in body and "ld.shared" in body and "bar.sync" in body
    result = run_ptxas(program.binary, "sm_80")
    assert result.accepted and result.spilling() == []


@needs_ptxas
def test_dot_is_a_gemm_call_and_its_epilogue_one_kernel():
    program = _compile(MATMUL_EPILOGUE, "sm_90")
    kinds = [type(s) for s in program.steps]
    assert kinds == [LibraryCall, KernelLaunch], program.steps
    gemm = program.steps[0].gemm
    assert (gemm.m, gemm.n, gemm.k, gemm.batch) == (256, 1024, 512, 1)
    assert not gemm.transpose_a and not gemm.transpose_b
    assert program.steps[1].args[0] == program.steps[0].args[2]  # reads the gemm's result
    assert run_ptxas(program.binary, "sm_90").accepted


def test_compiled_program_round_trips_without_pickle():
    program = _compile(SOFTMAX, "sm_90")
    back = GpuProgram.from_bytes(program.to_bytes())
    assert back == program and back.binary.startswith(b"//")


# a comparator with a transcendental on f64 values: the compiled f64 exp could order
# neighbouring values differently from NumPy's, so the sort stays on the host
SORT = """HloModule s
less {
  a = f64[] parameter(0)
  b = f64[] parameter(1)
  ea = f64[] exponential(a)
  ROOT l = pred[] compare(ea, b), direction=LT
}
ENTRY main {
  x = f64[64] parameter(0)
  ROOT s = f64[64] sort(x), dimensions={0}, to_apply=less
}
"""


def test_host_fallback_is_counted_with_its_reason():
    module = parse_module(SORT)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget("sm_90"))
    assert [type(s) for s in program.steps] == [HostFallback]
    assert program.stats()["host_fallbacks"] == 1 and "comparator" in program.fallbacks[0].reason


@pytest.mark.parametrize("bad", ["sm_6", "gfx90a", "sm_60"])
def test_bad_architecture_names_the_fix(bad):
    from hlort.errors import HlortError

    with pytest.raises(HlortError, match="sm_"):
        NvptxTarget(bad)
