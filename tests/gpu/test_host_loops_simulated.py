"""While loops as HostLoop steps (condition and body on the device, the loop on the host): every
while case of the conformance suite compiled with ``host_loops=True`` has no host fallback for
its while and matches the interpreter on the host simulator; the program round-trips."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.program import GpuProgram, HostLoop
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "while"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_while_runs_as_a_host_loop(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), host_loops=True)
    assert any(isinstance(s, HostLoop) for s in program.steps)
    assert "while" not in {f.opcode for f in program.fallbacks}
    assert GpuProgram.from_bytes(program.to_bytes()) == program
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem


LOOP_WITH_SCATTER_AND_SORT = """HloModule loop
setc {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
lt {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = pred[] compare(a, b), direction=LT
}
cond {
  s = (s32[], f32[10]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[10]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[10] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  idx = s32[4,1] constant({{1},{3},{1},{9}})
  u = f32[4] constant({5, 6, 7, 8})
  w = f32[10] scatter(v, idx, u), update_window_dims={}, \
    inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=setc
  t = f32[10] sort(w), dimensions={0}, to_apply=lt
  ROOT r = (s32[], f32[10]) tuple(j, t)
}
ENTRY main {
  x = f32[10] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[10]) tuple(zero, x)
  w = (s32[], f32[10]) while(init), condition=cond, body=body
  ROOT o = f32[10] get-tuple-element(w), index=1
}
"""


def test_a_loop_body_with_an_overwrite_scatter_and_a_sort_runs_on_the_device():
    """The scatter's copies and three kernels (its winner scratch included) and the sort kernel
    are steps of the loop body: no fallback, the interpreter's result bit for bit."""
    module = parse_module(LOOP_WITH_SCATTER_AND_SORT)
    args = [np.arange(10, dtype=np.float32)[::-1].copy()]
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    program = compile_gpu_program(optimized, HostSimTarget(32), host_loops=True)
    assert not program.fallbacks
    assert {k.schedule for k in program.kernels} >= {"scatter_overwrite", "sort_shared"}
    (got,) = HostSimRunner(program).run(args)
    assert got.tobytes() == expected.tobytes()
    assert GpuProgram.from_bytes(program.to_bytes()) == program


TOKEN_LOOP = """HloModule tokloop
cond {
  s = (s32[], f32[16,16], token[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[16,16], token[]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[16,16] get-tuple-element(s), index=1
  k = token[] get-tuple-element(s), index=2
  one = s32[] constant(1)
  j = s32[] add(i, one)
  d = f32[16,16] dot(v, v), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[16,16] tanh(d)
  after = token[] after-all(k)
  ROOT r = (s32[], f32[16,16], token[]) tuple(j, t, after)
}
ENTRY main {
  x = f32[16,16] parameter(0)
  zero = s32[] constant(0)
  k = token[] after-all()
  init = (s32[], f32[16,16], token[]) tuple(zero, x, k)
  w = (s32[], f32[16,16], token[]) while(init), condition=cond, body=body
  ROOT o = f32[16,16] get-tuple-element(w), index=1
}
"""


def test_a_loop_threading_a_token_is_a_host_loop():
    """A token in the loop state (JAX's ordered effects thread one through loops) has no slot:
    the state is its array leaves, the body's kernels run on the device, nothing falls back."""
    module = parse_module(TOKEN_LOOP)
    x = (np.arange(256, dtype=np.float32).reshape(16, 16) % 7 - 3) / 8
    expected = np.asarray(flatten_value(evaluate(module, [x]))[0])
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), host_loops=True, gemm_library=False)
    assert not program.fallbacks, program.fallback_summary()
    (loop,) = [s for s in program.steps if isinstance(s, HostLoop)]
    assert len(loop.state) == 2  # the counter and the matrix; the token has no slot
    assert GpuProgram.from_bytes(program.to_bytes()) == program
    (got,) = HostSimRunner(program).run([x])
    problem = describe_mismatch(got, expected, "accumulate")  # tanh: ulps
    assert problem is None, problem
