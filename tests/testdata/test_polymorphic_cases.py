"""Polymorphic corpus cases: refined at a sample size, verified, run, cross-checked."""

from __future__ import annotations

import pytest

from hlort.testdata.cases import split_cases
from hlort.testdata.execution import FAIL, PASS, UNSUPPORTED, run_case

# The corpus's style: a leading dimension argument, '?' dims, shapes computed from it.
DIM_ARG = """module @jit_fun_flat_jax {
  func.func public @main(%arg0: tensor<i64>, %arg1: tensor<?x4xf32>) -> tensor<2x?x4xf32> {
    %0 = stablehlo.constant dense<2> : tensor<1xi32>
    %1 = stablehlo.convert %arg0 : (tensor<i64>) -> tensor<i32>
    %2 = stablehlo.reshape %1 : (tensor<i32>) -> tensor<1xi32>
    %3 = stablehlo.constant dense<4> : tensor<1xi32>
    %4 = stablehlo.concatenate %0, %2, %3, dim = 0
        : (tensor<1xi32>, tensor<1xi32>, tensor<1xi32>) -> tensor<3xi32>
    %5 = stablehlo.dynamic_broadcast_in_dim %arg1, %4, dims = [1, 2]
        : (tensor<?x4xf32>, tensor<3xi32>) -> tensor<2x?x4xf32>
    %6 = stablehlo.exponential %5 : tensor<2x?x4xf32>
    return %6 : tensor<2x?x4xf32>
  }
}
"""

# Needs '?' >= 4 (a static slice of the dynamic dim): the runner tries the next sample size.
NEEDS_FOUR = """func.func @main(%arg0: tensor<?xf32>) -> tensor<4xf32> {
  %0 = stablehlo.slice %arg0 [0:4] : (tensor<?xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

DATA_DEPENDENT = """func.func @main(%arg0: tensor<?xf32>, %n: tensor<1xi32>) -> tensor<?xf32> {
  %0 = stablehlo.dynamic_reshape %arg0, %n : (tensor<?xf32>, tensor<1xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


def _run(text: str, platform: str):
    (case,) = split_cases("poly.mlir", "poly.mlir", text)
    return run_case(case, platform)


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_a_dimension_argument_case_refines_and_runs(platform):
    outcome = _run(DIM_ARG, platform)
    assert outcome.status == PASS, outcome.message
    assert "refined with '?' = 3, dimension arguments [3], verified" in outcome.message
    if platform == "cpu":
        assert "matches the interpreter" in outcome.message


def test_the_next_sample_size_is_tried_when_shapes_disagree():
    outcome = _run(NEEDS_FOUR, "interpreter")
    assert outcome.status == PASS, outcome.message
    assert "refined with '?' = 4" in outcome.message


def test_a_data_dependent_shape_is_unsupported_not_a_failure():
    outcome = _run(DATA_DEPENDENT, "interpreter")
    assert outcome.status == UNSUPPORTED
    assert "computed from runtime values" in outcome.message
    assert outcome.status != FAIL
