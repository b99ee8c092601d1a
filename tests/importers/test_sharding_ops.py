"""sdy sharding ops import as identities (single device); shard_map as per-device code (its
multi-device runs: tests/spmd/test_shard_map.py)."""

import numpy as np
import pytest

from hlort.errors import ErrorCode, HlortError
from hlort.interpreter import evaluate
from hlort.runtime.program import parse_stablehlo

_PRETTY = """module @m attributes {mhlo.num_partitions = 1 : i32} {
  sdy.mesh @mesh = <["a"=1]>
  func.func public @main(%arg0: tensor<2x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})
      -> (tensor<2x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"a"}, {}]>}) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{"a"}, {}]> : tensor<2x3xf32>
    %1 = sdy.reshard %0 <@mesh, [{}, {?}]> : tensor<2x3xf32>
    %2 = stablehlo.multiply %1, %arg0 : tensor<2x3xf32>
    return %2 : tensor<2x3xf32>
  }
}"""

_GENERIC = """module @m {
  sdy.mesh @mesh = <["a"=1]>
  func.func public @main(%arg0: tensor<3xi32>) -> tensor<3xi32> {
    %0 = "sdy.sharding_constraint"(%arg0) <{sharding = #sdy.sharding<@mesh, [{}]>}>
        : (tensor<3xi32>) -> tensor<3xi32>
    %1 = stablehlo.negate %0 : tensor<3xi32>
    return %1 : tensor<3xi32>
  }
}"""


def test_pretty_sharding_ops_are_identities():
    module = parse_stablehlo(_PRETTY)
    x = np.array([[1.5, -0.0, np.nan], [np.inf, -2.0, 3.0]], np.float32)
    out = evaluate(module, [x])
    np.testing.assert_array_equal(out, x * x)


def test_generic_sharding_constraint_is_identity():
    out = evaluate(parse_stablehlo(_GENERIC), [np.array([1, -2, 3], np.int32)])
    np.testing.assert_array_equal(out, [-1, 2, -3])


def test_manual_computation_is_per_device_code_one_device_cannot_run():
    text = """module @m {
  sdy.mesh @mesh = <["a"=2]>
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}]>]
        out_shardings=[<@mesh, [{"a"}]>] manual_axes={"a"} (%x: tensor<2xf32>) {
      sdy.return %x : tensor<2xf32>
    } : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}"""
    module = parse_stablehlo(text)
    targets = [i.attrs.get("custom_call_target") for i in module.entry.instructions]
    assert "SPMDFullToShardShape" in targets and "SPMDShardToFullShape" in targets
    with pytest.raises(HlortError) as info:  # 2 tiles of 2, but one device runs it
        evaluate(module, [np.zeros(4, np.float32)])
    assert info.value.code is ErrorCode.UNIMPLEMENTED
    assert "partitioned backend" in info.value.message


def test_manual_computation_arguments_may_carry_locations():
    """JAX's exports print each per-device argument with its location
    (``%arg1: tensor<1x4xf32> loc("shard_map:"(#loc46))``); the parser stopped at ``loc``."""
    text = """#loc1 = loc("x")
module @m attributes {mhlo.num_partitions = 1 : i32} {
  sdy.mesh @mesh = <["a"=1]>
  func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"a"}]>]
        out_shardings=[<@mesh, [{"a"}]>] manual_axes={"a"} (%x: tensor<4xf32> loc("s:"(#loc1))) {
      %1 = stablehlo.negate %x : tensor<4xf32> loc(#loc1)
      sdy.return %1 : tensor<4xf32> loc(#loc1)
    } : (tensor<4xf32>) -> tensor<4xf32> loc(#loc1)
    return %0 : tensor<4xf32>
  }
}"""
    x = np.array([1.0, -0.0, np.inf, np.nan], np.float32)
    np.testing.assert_array_equal(evaluate(parse_stablehlo(text), [x]), -x)


def test_shardy_round_trip_result_sharding_is_its_operand():
    """``xla.sdy.FuncResultSharding`` (jax's 2025-04 exports) states the sharding the result's
    ``mhlo.sharding`` states too; it was an unregistered custom call (UNIMPLEMENTED)."""
    text = """module @m attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32> {mhlo.sharding = "{replicated}"}) {
    %0 = stablehlo.negate %arg0 : tensor<2xf32>
    %1 = stablehlo.custom_call @xla.sdy.FuncResultSharding(%0) {has_side_effect = true,
        mhlo.frontend_attributes = {xla.sdy.sharding = "#sdy.sharding_per_value<[<@mesh, [{}]>]>"}}
        : (tensor<2xf32>) -> tensor<2xf32>
    return %1 : tensor<2xf32>
  }
}"""
    module = parse_stablehlo(text)
    assert not [i for i in module.entry.instructions if i.attrs.get("custom_call_target")]
    x = np.array([1.5, -0.0], np.float32)
    np.testing.assert_array_equal(evaluate(module, [x]), -x)
