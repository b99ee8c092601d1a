"""Optimization barriers (jax.checkpoint's remat boundaries) on the GPU are device copies of
their operands, never host fallbacks: every conformance case bit for bit on the host simulator,
and a barrier between two kernels of a loop body; one carrying a token too (a token has no slot:
only its array leaves are copied)."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, check_case_without_fallback, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "opt-barrier"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case):
    check_case_without_fallback(case, "bits")


REMAT = """HloModule remat
cond {
  s = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(3)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[64]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[64] get-tuple-element(s), index=1
  e = f32[64] exponential(v)
  t = (f32[64], s32[]) tuple(e, i)
  b = (f32[64], s32[]) opt-barrier(t)
  be = f32[64] get-tuple-element(b), index=0
  bi = s32[] get-tuple-element(b), index=1
  h = f32[64] tanh(be)
  one = s32[] constant(1)
  j = s32[] add(bi, one)
  ROOT r = (s32[], f32[64]) tuple(j, h)
}
ENTRY main {
  x = f32[64] parameter(0)
  zero = s32[] constant(0)
  init = (s32[], f32[64]) tuple(zero, x)
  w = (s32[], f32[64]) while(init), condition=cond, body=body
  ROOT o = f32[64] get-tuple-element(w), index=1
}
"""


def test_a_barrier_between_kernels_of_a_loop_body_stays_on_the_device():
    module = parse_module(REMAT)
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    expected = np.asarray(flatten_value(evaluate(module, [x]))[0])
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    (got,) = HostSimRunner(program).run([x])
    np.testing.assert_allclose(got, expected, rtol=4 * 2.0**-23, atol=0)  # exp, tanh: ulps


def test_a_barrier_carrying_a_token_copies_its_arrays_on_the_device():
    module = parse_module(
        """HloModule tok
ENTRY main {
  x = f32[4] parameter(0)
  k = token[] after-all()
  t = (f32[4], token[]) tuple(x, k)
  b = (f32[4], token[]) opt-barrier(t)
  ROOT y = f32[4] get-tuple-element(b), index=0
}
"""
    )
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()  # after-all is no step either
    x = np.array([1.5, -0.0, np.nan, np.inf], np.float32)
    (got,) = HostSimRunner(program).run([x])
    assert got.tobytes() == np.asarray(evaluate(module, [x])).tobytes()
