"""``stablehlo.dynamic_top_k`` and ``stablehlo.dynamic_rng_bit_generator`` custom calls (JAX's
2023 shape-polymorphic exports) run as the static ops their folded sizes make them: the same
values as ``chlo.top_k`` / ``stablehlo.rng_bit_generator`` written statically. Before
dynamic_custom_calls.py both were UNIMPLEMENTED ("shape refinement has no rule")."""

import numpy as np
import pytest

import hlort
from hlort.errors import ErrorCode, HlortError

TOP_K = """module @m {
  func.func public @main(%x: tensor<2x?xf32>) -> (tensor<2x?xf32>, tensor<2x?xi32>) {
    %n = stablehlo.get_dimension_size %x, dim = 1 : (tensor<2x?xf32>) -> tensor<i32>
    %two = stablehlo.constant dense<2> : tensor<i32>
    %k = K
    %0:2 = stablehlo.custom_call @stablehlo.dynamic_top_k(%x, %k) {api_version = 2 : i32}
        : (tensor<2x?xf32>, tensor<i32>) -> (tensor<2x?xf32>, tensor<2x?xi32>)
    return %0#0, %0#1 : tensor<2x?xf32>, tensor<2x?xi32>
  }
}"""

STATIC_TOP_K = """module @m {
  func.func public @main(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {
    %0:2 = chlo.top_k(%x, k = 3) : tensor<2x5xf32> -> (tensor<2x3xf32>, tensor<2x3xi32>)
    return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi32>
  }
}"""


def _top_k(k_line: str) -> str:
    return TOP_K.replace("K", k_line, 1)


def test_dynamic_top_k_is_top_k_of_the_folded_k():
    x = np.array([[1.0, np.nan, -0.0, 0.0, 3.0], [2.0, 2.0, -np.inf, 5.0, 2.0]], np.float32)
    text = _top_k("stablehlo.subtract %n, %two : tensor<i32>")  # k = 5 - 2
    values, indices = hlort.compile(text, "cpu")(x)
    want_values, want_indices = hlort.compile(STATIC_TOP_K, "cpu")(x)
    np.testing.assert_array_equal(np.asarray(values), np.asarray(want_values))
    np.testing.assert_array_equal(np.asarray(indices), np.asarray(want_indices))
    assert np.asarray(indices).tolist()[1] == [3, 0, 1]  # ties: the lower index first


def test_a_k_beyond_the_dimension_is_invalid():
    text = _top_k("stablehlo.add %n, %two : tensor<i32>")  # k = 7 of 5
    with pytest.raises(HlortError) as info:
        hlort.compile(text, "interpreter")(np.zeros((2, 5), np.float32))
    assert info.value.code is ErrorCode.INVALID_ARGUMENT and "k = 7" in info.value.message


RNG = """module @m {
  func.func public @main(%s: tensor<2xui64>, %a: tensor<?x3xf32>)
      -> (tensor<2xui64>, tensor<?x4xui32>) {
    %n = stablehlo.get_dimension_size %a, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
    %r = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
    %four = stablehlo.constant dense<4> : tensor<1xi32>
    %shape = stablehlo.concatenate %r, %four, dim = 0
        : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %0:2 = stablehlo.custom_call @stablehlo.dynamic_rng_bit_generator(%s, %shape)
        {api_version = 2 : i32, rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>}
        : (tensor<2xui64>, tensor<2xi32>) -> (tensor<2xui64>, tensor<?x4xui32>)
    return %0#0, %0#1 : tensor<2xui64>, tensor<?x4xui32>
  }
}"""

STATIC_RNG = """module @m {
  func.func public @main(%s: tensor<2xui64>) -> (tensor<2xui64>, tensor<5x4xui32>) {
    %0:2 = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY
        : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5x4xui32>)
    return %0#0, %0#1 : tensor<2xui64>, tensor<5x4xui32>
  }
}"""


@pytest.mark.parametrize("platform", ["interpreter", "cpu"])
def test_dynamic_rng_bit_generator_is_the_static_one(platform):
    state = np.array([42, 7], np.uint64)
    got = hlort.compile(RNG, platform)(state, np.zeros((5, 3), np.float32))
    want = hlort.compile(STATIC_RNG, platform)(state)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert np.asarray(got[1]).shape == (5, 4)
