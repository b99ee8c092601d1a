"""Shape refinement of polymorphic StableHLO: per-op rules, call sites, assertions, errors."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.importers.stablehlo import import_stablehlo
from hlort.importers.stablehlo.polymorphic import parse as parse_mlir
from hlort.importers.stablehlo.polymorphic import refine_stablehlo, signature
from hlort.interpreter import evaluate
from hlort.ir.opcodes import Opcode
from hlort.ir.verifier import verify_module
from hlort.shape import array

CALLS = """module @m {
  func.func public @main(%x: tensor<?xf32>, %y: tensor<?x2xf32>) -> (tensor<?xf32>,
      tensor<?x2xf32>) {
    %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
    %m = stablehlo.get_dimension_size %y, dim = 0 : (tensor<?x2xf32>) -> tensor<i32>
    %a = call @double(%n, %x) : (tensor<i32>, tensor<?xf32>) -> tensor<?xf32>
    %y1 = stablehlo.reshape %y : (tensor<?x2xf32>) -> tensor<?xf32>
    %two = stablehlo.constant dense<2> : tensor<i32>
    %m2 = stablehlo.multiply %m, %two : tensor<i32>
    %b = call @double(%m2, %y1) : (tensor<i32>, tensor<?xf32>) -> tensor<?xf32>
    %b2 = stablehlo.reshape %b : (tensor<?xf32>) -> tensor<?x2xf32>
    return %a, %b2 : tensor<?xf32>, tensor<?x2xf32>
  }
  func.func private @double(%n: tensor<i32> {jax.global_constant = "n"},
      %v: tensor<?xf32>) -> tensor<?xf32> {
    %s = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
    %i = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
    %0 = stablehlo.add %v, %v : tensor<?xf32>
    %1 = stablehlo.add %0, %i : tensor<?xf32>
    return %1 : tensor<?xf32>
  }
}
"""

ASSERTING = """func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {
  %n = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?xf32>) -> tensor<i32>
  %c = stablehlo.constant dense<2> : tensor<i32>
  %ok = stablehlo.compare GE, %n, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
  stablehlo.custom_call @shape_assertion(%ok, %n) {error_message = "need b >= 2, got b = {0}",
      has_side_effect = true} : (tensor<i1>, tensor<i32>) -> ()
  return %x : tensor<?xf32>
}
"""

DIM_ARGUMENT = """func.func @main(%b: tensor<i64>, %x: tensor<?x2xf32>) -> tensor<2x?xf32> {
  %0 = stablehlo.convert %b : (tensor<i64>) -> tensor<i32>
  %1 = stablehlo.reshape %0 : (tensor<i32>) -> tensor<1xi32>
  %c = stablehlo.constant dense<2> : tensor<1xi32>
  %s = stablehlo.concatenate %c, %1, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
  %t = stablehlo.transpose %x, dims = [1, 0] : (tensor<?x2xf32>) -> tensor<2x?xf32>
  %r = stablehlo.dynamic_broadcast_in_dim %t, %s, dims = [0, 1] : (tensor<2x?xf32>,
      tensor<2xi32>) -> tensor<2x?xf32>
  return %r : tensor<2x?xf32>
}
"""

CONTROL_FLOW = """func.func @main(%x: tensor<?xf32>, %p: tensor<i1>)
    -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c3 = stablehlo.constant dense<3> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<?xf32>
    cond {
      %lt = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %w = stablehlo.add %v, %v : tensor<?xf32>
      stablehlo.return %n, %w : tensor<i32>, tensor<?xf32>
    }
  %s = "stablehlo.if"(%p) ({
      %a = stablehlo.negate %x : tensor<?xf32>
      stablehlo.return %a : tensor<?xf32>
    }, {
      stablehlo.return %x : tensor<?xf32>
    }) : (tensor<i1>) -> tensor<?xf32>
  return %r#1, %s : tensor<?xf32>, tensor<?xf32>
}"""

DATA_DEPENDENT = """func.func @main(%x: tensor<?xf32>, %n: tensor<1xi32>) -> tensor<?xf32> {
  %0 = stablehlo.dynamic_reshape %x, %n : (tensor<?xf32>, tensor<1xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
"""


def test_called_functions_are_refined_per_call_site():
    shapes = [array("f32", (3,)), array("f32", (4, 2))]
    module = refine_stablehlo(CALLS, shapes).result.module
    verify_module(module)
    calls = [i for i in module.entry.instructions if i.opcode is Opcode.CALL]
    callees = {c.attrs["to_apply"] for c in calls}
    assert sorted(str(c.root.shape) for c in callees) == ["f32[3]", "f32[8]"]
    x = np.arange(3, dtype=np.float32)
    y = np.ones((4, 2), np.float32)
    a, b = evaluate(module, [x, y])
    np.testing.assert_array_equal(a, 2 * x + np.arange(3))
    np.testing.assert_array_equal(b, (2 * y.reshape(-1) + np.arange(8)).reshape(4, 2))
    again = refine_stablehlo(CALLS, [array("f32", (5,)), array("f32", (1, 2))]).result.module
    assert [p.shape for p in again.entry.parameters] == [array("f32", (5,)), array("f32", (1, 2))]


def test_a_failing_shape_assertion_is_invalid_argument_with_the_filled_message():
    refine_stablehlo(ASSERTING, [array("f32", (2,))])  # holds
    with pytest.raises(HlortError) as info:
        refine_stablehlo(ASSERTING, [array("f32", (1,))])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert "need b >= 2, got b = 1" in info.value.message


def test_dimension_arguments_are_taken_from_the_inputs_or_given():
    sig = signature(parse_mlir(DIM_ARGUMENT))
    assert sig.dim_args == [0] and sig.array_args == [1]
    refined = refine_stablehlo(DIM_ARGUMENT, [array("f32", (5, 2))])
    assert refined.dim_values == {0: 5}
    module = refined.result.module
    assert [p.shape for p in module.entry.parameters] == [array("f32", (5, 2))]
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    np.testing.assert_array_equal(evaluate(module, [x]), x.T)
    with pytest.raises(HlortError) as info:
        refine_stablehlo(DIM_ARGUMENT, [array("f32", (5, 2))], dim_values=[4])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT  # 5 columns do not broadcast to 4


def test_a_non_conforming_argument_names_its_type():
    with pytest.raises(HlortError, match=r"does not conform to tensor<\?x2xf32>"):
        refine_stablehlo(DIM_ARGUMENT, [array("f32", (5, 3))])
    with pytest.raises(HlortError, match="takes 1 array argument"):
        refine_stablehlo(DIM_ARGUMENT, [])


def test_a_data_dependent_shape_is_unimplemented_naming_the_operand():
    with pytest.raises(HlortError) as info:
        refine_stablehlo(DATA_DEPENDENT, [array("f32", (4,)), array("s32", (1,))])
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "output_dimensions (operand 1) is computed from runtime values" in info.value.message
    assert "not supported" not in info.value.message


def test_a_polymorphic_program_imported_without_shapes_says_how_to_run_it():
    with pytest.raises(HlortError) as info:
        import_stablehlo(ASSERTING)
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "hlort.compile" in info.value.message


def test_while_and_if_results_are_refined_from_their_operands():
    shapes = [array("f32", (4,)), array("pred", ())]
    module = refine_stablehlo(CONTROL_FLOW, shapes).result.module
    x = np.arange(4, dtype=np.float32)
    loop, branch = evaluate(module, [x, np.bool_(True)])
    np.testing.assert_array_equal(loop, 8 * x)
    np.testing.assert_array_equal(branch, -x)
