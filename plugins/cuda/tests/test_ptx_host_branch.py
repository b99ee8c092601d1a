"""Conditionals on cuda: the client compiles them as HostBranch steps (the selector read back on
the host, every branch's kernels in the program's PTX), never as host fallbacks, and ptxas
accepts the PTX for sm_80 and sm_90 with no spills. What the branches compute is checked on the
host simulator (tests/gpu/test_host_branches_simulated.py). Skipped with the reason when no
ptxas is installed."""

import pytest

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.program import HostBranch, KernelLaunch, every_step
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.text.parser import parse_module
from hlort_cuda.nvptx_target import NvptxTarget
from hlort_cuda.ptx_check import find_ptxas, missing_ptxas_reason, run_ptxas

BRANCHES = """HloModule branches
b0 {
  p = f32[256,128] parameter(0)
  e = f32[256,128] exponential(p)
  z = f32[] constant(0)
  ROOT s = f32[256] reduce(e, z), dimensions={1}, to_apply=add
}
b1 {
  p = (f32[256,128], f32[256]) parameter(0)
  x = f32[256,128] get-tuple-element(p), index=0
  z = f32[] constant(-inf)
  ROOT m = f32[256] reduce(x, z), dimensions={1}, to_apply=max
}
b2 {
  p = f32[256] parameter(0)
  ROOT n = f32[256] negate(p)
}
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] maximum(a, b)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[256,128] parameter(1)
  y = f32[256] parameter(2)
  t = (f32[256,128], f32[256]) tuple(x, y)
  ROOT c = f32[256] conditional(i, x, t, y), branch_computations={b0, b1, b2}
}
"""


@pytest.mark.skipif(find_ptxas() is None, reason=missing_ptxas_reason())
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_a_three_way_conditional_is_a_host_branch_whose_kernels_assemble(arch):
    module = parse_module(BRANCHES)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, NvptxTarget(arch), host_loops=True)
    assert not program.fallbacks, program.fallback_summary()
    (branch,) = [s for s in program.steps if isinstance(s, HostBranch)]
    launched = [
        [s.kernel for s in every_step(steps) if isinstance(s, KernelLaunch)]
        for steps in branch.branches
    ]
    assert all(launched), launched  # every branch runs a kernel of its own
    names = {k.name: k.schedule for k in program.kernels}
    assert {names[k] for k in launched[0] + launched[1]} >= {"row_reduce"}, names
    result = run_ptxas(program.binary, arch)
    assert result.accepted, result.log
    assert not any(u.spills for u in result.kernels.values()), result.kernels
