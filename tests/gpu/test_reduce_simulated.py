"""Reduces on the GPU, on the host simulator against the interpreter: every conformance case
with no host fallback (narrow-float variadic reduces with a selecting reducer, argmin over
f16/bf16/float8 values, included: the inlined reducer rounds narrow results after every step),
and an argmax with its index over bf16 rows holding NaN, -0.0/+0.0 ties and infinities, bit for
bit (a selecting reducer is exact in any order)."""

import ml_dtypes
import numpy as np
import pytest
from host_simulator import HostSimRunner, check_case_without_fallback, simulated_program

from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "reduce"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case_runs_without_fallback(case):
    check_case_without_fallback(case)


ARGMAX = """HloModule argmax
pick {
  v0 = bf16[] parameter(0)
  i0 = s32[] parameter(1)
  v1 = bf16[] parameter(2)
  i1 = s32[] parameter(3)
  gt = pred[] compare(v0, v1), direction=GT, type=TOTALORDER
  eq = pred[] compare(v0, v1), direction=EQ, type=TOTALORDER
  lt = pred[] compare(i0, i1), direction=LT
  tie = pred[] and(eq, lt)
  take = pred[] or(gt, tie)
  v = bf16[] select(take, v0, v1)
  i = s32[] select(take, i0, i1)
  ROOT r = (bf16[], s32[]) tuple(v, i)
}
ENTRY main {
  x = bf16[5,100] parameter(0)
  idx = s32[5,100] iota(), iota_dimension=1
  lo = bf16[] constant(-inf)
  big = s32[] constant(2147483647)
  ROOT o = (bf16[5], s32[5]) reduce(x, idx, lo, big), dimensions={1}, to_apply=pick
}
"""


def test_bf16_argmax_with_nan_signed_zeros_and_infinities_is_bit_exact():
    module = parse_module(ARGMAX)
    x = np.random.default_rng(4).standard_normal((5, 100)).astype(ml_dtypes.bfloat16)
    x[0, 17] = np.nan  # TOTALORDER: +NaN above everything
    x[1] = 0.0
    x[1, 40] = -0.0  # -0.0 below +0.0: the first +0.0 wins
    x[2, [3, 90]] = np.inf  # a tie: the lower index wins
    x[3] = -np.inf  # every element equals the init: the first index
    expected = flatten_value(evaluate(module, [x]))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    got = HostSimRunner(program).run([x])
    for g, e in zip(got, expected, strict=True):
        assert describe_mismatch(g, np.asarray(e), "bits") is None
    assert got[1].tolist()[:4] == [17, 0, 3, 0]
