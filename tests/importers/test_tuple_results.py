"""A call or custom call whose one result is a tuple (XLA's older tuple-returning calls, as JAX
exported TPU's ``Qr`` in 2023: ``custom_call @Qr : (...) -> tuple<...>`` inside a function that
returns that tuple) is that tuple, read with ``get_tuple_element``. The importer used to take
element 0 of it, so the following ``get_tuple_element`` failed with "produces f32[3,3], but its
declared type is tuple<...>"."""

import numpy as np

from hlort.interpreter import evaluate
from hlort.runtime.program import parse_stablehlo

_CALL = """module @m {
  func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<2xi32>)
      -> (tensor<3xf32>, tensor<2xi32>) {
    %0 = call @pair(%arg0, %arg1)
        : (tensor<3xf32>, tensor<2xi32>) -> tuple<tensor<3xf32>, tensor<2xi32>>
    %1 = stablehlo.get_tuple_element %0[0]
        : (tuple<tensor<3xf32>, tensor<2xi32>>) -> tensor<3xf32>
    %2 = stablehlo.get_tuple_element %0[1]
        : (tuple<tensor<3xf32>, tensor<2xi32>>) -> tensor<2xi32>
    return %1, %2 : tensor<3xf32>, tensor<2xi32>
  }
  func.func private @pair(%a: tensor<3xf32>, %b: tensor<2xi32>)
      -> tuple<tensor<3xf32>, tensor<2xi32>> {
    %n = stablehlo.negate %a : tensor<3xf32>
    %t = stablehlo.tuple %n, %b : tuple<tensor<3xf32>, tensor<2xi32>>
    return %t : tuple<tensor<3xf32>, tensor<2xi32>>
  }
}"""

_QR = """module @m {
  func.func public @main(%arg0: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>) {
    %0 = stablehlo.custom_call @Qr(%arg0)
        : (tensor<3x3xf32>) -> tuple<tensor<3x3xf32>, tensor<3xf32>>
    %1 = stablehlo.get_tuple_element %0[0]
        : (tuple<tensor<3x3xf32>, tensor<3xf32>>) -> tensor<3x3xf32>
    %2 = stablehlo.get_tuple_element %0[1]
        : (tuple<tensor<3x3xf32>, tensor<3xf32>>) -> tensor<3xf32>
    return %1, %2 : tensor<3x3xf32>, tensor<3xf32>
  }
}"""
_QR_TWO_RESULTS = """module @m {
  func.func public @main(%arg0: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>) {
    %0:2 = stablehlo.custom_call @Qr(%arg0) : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3xf32>)
    return %0#0, %0#1 : tensor<3x3xf32>, tensor<3xf32>
  }
}"""


def test_a_function_returning_one_tuple_is_that_tuple():
    x = np.array([1.0, -0.0, np.nan], np.float32)
    y = np.array([7, -8], np.int32)
    got_x, got_y = evaluate(parse_stablehlo(_CALL), [x, y])
    np.testing.assert_array_equal(got_x, -x)
    np.testing.assert_array_equal(got_y, y)


def test_a_custom_call_returning_one_tuple_is_that_tuple():
    """TPU's Qr (geqrf: R on and above the diagonal, reflectors below, and tau) as one tuple
    result: the same values as the two-result form JAX emits today."""
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]], np.float32)
    packed, tau = evaluate(parse_stablehlo(_QR), [a])
    want_packed, want_tau = evaluate(parse_stablehlo(_QR_TWO_RESULTS), [a])
    np.testing.assert_array_equal(packed, want_packed)
    np.testing.assert_array_equal(tau, want_tau)
    r = np.triu(packed)
    np.testing.assert_allclose(np.abs(np.diag(r)), np.abs(np.diag(np.linalg.qr(a)[1])), rtol=1e-5)
