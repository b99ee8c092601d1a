"""Conditionals as HostBranch steps (the choice on the host, every branch on the device): every
conditional case of the conformance suite compiled with ``host_loops=True`` has no host fallback
for its conditional and matches the interpreter on the host simulator; selectors out of range
run the last branch; branches nest inside loops and hold gemms; the program round-trips."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.codegen.gpu.program import GpuProgram, HostBranch, LibraryCall, every_step
from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "conditional"]


def test_the_suite_has_conditional_cases():
    assert len(CASES) >= 3


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conditional_runs_as_a_host_branch(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    program = simulated_program(case.module)
    assert any(isinstance(s, HostBranch) for s in every_step(program.steps))
    assert "conditional" not in {f.opcode for f in program.fallbacks}, program.fallback_summary()
    assert GpuProgram.from_bytes(program.to_bytes()) == program
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem


INDEXED = """HloModule indexed
b0 {
  p = f32[4] parameter(0)
  ROOT r = f32[4] add(p, p)
}
b1 {
  p = f32[4] parameter(0)
  ROOT r = f32[4] negate(p)
}
b2 {
  p = (f32[4], f32[4]) parameter(0)
  a = f32[4] get-tuple-element(p), index=0
  b = f32[4] get-tuple-element(p), index=1
  ROOT r = f32[4] multiply(a, b)
}
ENTRY main {
  i = s32[] parameter(0)
  x = f32[4] parameter(1)
  y = f32[4] parameter(2)
  t = (f32[4], f32[4]) tuple(x, y)
  ROOT c = f32[4] conditional(i, x, x, t), branch_computations={b0, b1, b2}
}
"""


@pytest.mark.parametrize("index", [-7, -1, 0, 1, 2, 3, 2**31 - 1])
def test_an_index_selects_its_branch_and_out_of_range_runs_the_last(index):
    module = parse_module(INDEXED)
    x = np.array([1.5, -0.0, np.inf, np.nan], np.float32)
    y = np.array([2.0, 3.0, -1.0, 4.0], np.float32)
    args = [np.array(index, np.int32), x, y]
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    program = simulated_program(module)
    (branch,) = [s for s in program.steps if isinstance(s, HostBranch)]
    assert branch.selector_dtype == "s32" and len(branch.branches) == 3
    assert not program.fallbacks
    (got,) = HostSimRunner(program).run(args)
    assert got.tobytes() == expected.tobytes()


LOOP_OF_BRANCHES = """HloModule loop_of_branches
even {
  p = (f32[8,8], f32[8,8]) parameter(0)
  a = f32[8,8] get-tuple-element(p), index=0
  w = f32[8,8] get-tuple-element(p), index=1
  ROOT d = f32[8,8] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
odd {
  p = (f32[8,8], f32[8,8]) parameter(0)
  a = f32[8,8] get-tuple-element(p), index=0
  h = f32[] constant(0.5)
  hb = f32[8,8] broadcast(h), dimensions={}
  ROOT m = f32[8,8] multiply(a, hb)
}
cond {
  s = (s32[], f32[8,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(5)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,8], f32[8,8]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  a = f32[8,8] get-tuple-element(s), index=1
  w = f32[8,8] get-tuple-element(s), index=2
  two = s32[] constant(2)
  r = s32[] remainder(i, two)
  zero = s32[] constant(0)
  e = pred[] compare(r, zero), direction=EQ
  t = (f32[8,8], f32[8,8]) tuple(a, w)
  na = f32[8,8] conditional(e, t, t), true_computation=even, false_computation=odd
  one = s32[] constant(1)
  j = s32[] add(i, one)
  ROOT o = (s32[], f32[8,8], f32[8,8]) tuple(j, na, w)
}
ENTRY main {
  x = f32[8,8] parameter(0)
  w = f32[8,8] parameter(1)
  zero = s32[] constant(0)
  init = (s32[], f32[8,8], f32[8,8]) tuple(zero, x, w)
  l = (s32[], f32[8,8], f32[8,8]) while(init), condition=cond, body=body
  ROOT out = f32[8,8] get-tuple-element(l), index=1
}
"""


def test_a_pred_branch_inside_a_loop_body_with_a_gemm_runs_on_the_device():
    """Five iterations alternating a dot (a gemm library call in branch 0) and a scaling
    kernel (branch 1): no fallback, the interpreter's result within f32 dot rounding."""
    module = parse_module(LOOP_OF_BRANCHES)
    rng = np.random.default_rng(7)
    args = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(2)]
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    branches = [s for s in every_step(program.steps) if isinstance(s, HostBranch)]
    assert len(branches) == 1 and branches[0].selector_dtype == "pred"
    assert any(isinstance(s, LibraryCall) for s in every_step(branches[0].branches[0]))
    assert program.stats()["host_branches"] == 1
    assert GpuProgram.from_bytes(program.to_bytes()) == program
    (got,) = HostSimRunner(program).run(args)
    # the simulator's gemm accumulates in f64 and rounds once; the interpreter's f32 dot
    # rounds per product sum: 1e-5 relative over three chained 8x8 products
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_a_conditional_threading_a_token_is_a_host_branch():
    """Tokens (JAX's ordered effects) in a branch's operand and result have no slots: the
    branch's arrays are computed on the device and the token orders nothing the steps' order
    does not already."""
    module = parse_module(
        """HloModule tok
t {
  p = (f32[8], token[]) parameter(0)
  x = f32[8] get-tuple-element(p), index=0
  k = token[] get-tuple-element(p), index=1
  y = f32[8] exponential(x)
  j = token[] after-all(k)
  ROOT r = (f32[8], token[]) tuple(y, j)
}
f {
  p = (f32[8], token[]) parameter(0)
  x = f32[8] get-tuple-element(p), index=0
  k = token[] get-tuple-element(p), index=1
  y = f32[8] negate(x)
  ROOT r = (f32[8], token[]) tuple(y, k)
}
ENTRY main {
  b = pred[] parameter(0)
  x = f32[8] parameter(1)
  k = token[] after-all()
  o = (f32[8], token[]) tuple(x, k)
  c = (f32[8], token[]) conditional(b, o, o), true_computation=t, false_computation=f
  ROOT y = f32[8] get-tuple-element(c), index=0
}
"""
    )
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert any(isinstance(s, HostBranch) for s in program.steps)
    x = np.linspace(-2, 2, 8, dtype=np.float32)
    for b in (True, False):
        args = [np.array(b), x]
        expected = np.asarray(flatten_value(evaluate(module, args))[0])
        (got,) = HostSimRunner(program).run(args)
        np.testing.assert_allclose(got, expected, rtol=2 * 2.0**-23, atol=0)  # exp: ulps
