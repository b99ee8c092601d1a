"""CHLO decompositions against the math they compute (stdlib math and cmath as the reference)."""

from __future__ import annotations

import cmath
import math

import numpy as np
import pytest

import hlort
from hlort.importers.stablehlo import parse_stablehlo

X64 = np.array(
    [-3.7, -2.5, -1.2, -0.6, -0.1, 0.0, 0.2, 0.5, 0.9, 1.0, 1.5, 2.0, 3.3, 6.1, 9.5, 27.0, 150.0]
)


def unary(op: str, x: np.ndarray, element: str, out_element: str | None = None) -> np.ndarray:
    n = x.size
    out_element = out_element or element
    text = (
        f"func.func @main(%x: tensor<{n}x{element}>) -> tensor<{n}x{out_element}> {{\n"
        f"  %0 = chlo.{op} %x : tensor<{n}x{element}> -> tensor<{n}x{out_element}>\n"
        f"  return %0 : tensor<{n}x{out_element}>\n}}\n"
    )
    return hlort.evaluate(parse_stablehlo(text, op), [x])


def reference(fn, xs) -> np.ndarray:
    out = []
    for v in xs:
        try:
            out.append(fn(float(v)))
        except (ValueError, OverflowError):
            out.append(math.nan)
    return np.array(out)


@pytest.mark.parametrize(
    "op,fn,domain,rtol",
    [
        ("erf", math.erf, X64, 1e-15),
        ("erfc", math.erfc, X64, 1e-13),
        ("lgamma", math.lgamma, X64[X64 != 0], 1e-12),  # plus 1e-14 absolute near its zeros
        ("asinh", math.asinh, X64, 1e-15),
        ("acosh", math.acosh, X64[X64 >= 1], 1e-15),
        ("atanh", math.atanh, X64[np.abs(X64) < 1], 1e-15),
        ("atan", math.atan, X64, 1e-15),
        ("asin", math.asin, X64[np.abs(X64) <= 1], 1e-15),
        ("acos", math.acos, X64[np.abs(X64) <= 1], 1e-15),
        ("sinh", math.sinh, X64[np.abs(X64) < 100], 1e-14),
        ("cosh", math.cosh, X64[np.abs(X64) < 100], 1e-14),
        ("tan", math.tan, X64, 1e-14),
        ("square", lambda v: v * v, X64, 0.0),
    ],
)
def test_real_functions_in_f64(op, fn, domain, rtol):
    got = unary(op, domain.astype(np.float64), "f64")
    atol = 1e-14 if op == "lgamma" else 1e-300
    np.testing.assert_allclose(got, reference(fn, domain), rtol=rtol, atol=atol)


@pytest.mark.parametrize(
    "element,dtype,rtol",
    [("f32", np.float32, 3e-6), ("f16", np.float16, 2e-3), ("bf16", "bfloat16", 2e-2)],
)
def test_real_functions_in_narrow_types(element, dtype, rtol):
    import ml_dtypes

    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    x = np.array([0.3, 1.7, 2.5, 4.0], np.float64)
    for op, fn in (("lgamma", math.lgamma), ("erf", math.erf), ("sinh", math.sinh)):
        got = unary(op, x.astype(np_dtype), element).astype(np.float64)
        np.testing.assert_allclose(
            got,
            reference(fn, x.astype(np_dtype).astype(np.float64)),
            rtol=rtol,
            atol=rtol,
            err_msg=op,
        )


def test_special_values():
    assert np.isposinf(unary("lgamma", np.array([-2.0, 0.0, np.inf]), "f64")).all()
    assert np.isnan(unary("digamma", np.array([0.0, -3.0]), "f64")).all()
    assert np.isnan(unary("atanh", np.array([1.5]), "f64")).all()
    inv = unary("erf_inv", np.array([-1.0, 1.0, 0.0]), "f64")
    assert inv[0] == -np.inf and inv[1] == np.inf and inv[2] == 0


def test_erf_inv_inverts_erf():
    y = np.array([-0.999, -0.5, -1e-5, 0.1, 0.75, 0.9999], np.float64)
    x = unary("erf_inv", y, "f64")
    np.testing.assert_allclose(reference(math.erf, x), y, rtol=1e-14)
    x32 = unary("erf_inv", y.astype(np.float32), "f32").astype(np.float64)
    np.testing.assert_allclose(reference(math.erf, x32), y, rtol=2e-6)


def test_digamma_matches_the_derivative_of_lgamma():
    x = np.array([-2.5, -0.3, 0.7, 1.0, 3.2, 12.0])
    h = 1e-6
    numeric = (reference(math.lgamma, x + h) - reference(math.lgamma, x - h)) / (2 * h)
    np.testing.assert_allclose(unary("digamma", x, "f64"), numeric, rtol=1e-6)


def test_bessel_i1e_against_its_series():
    x = np.array([-4.0, -0.5, 0.0, 0.25, 1.0, 7.5, 9.0, 30.0])

    def i1e(v: float) -> float:
        total = sum(
            (v / 2) ** (2 * k + 1) / (math.factorial(k) * math.factorial(k + 1)) for k in range(80)
        )
        return total * math.exp(-abs(v))

    np.testing.assert_allclose(unary("bessel_i1e", x, "f64"), reference(i1e, x), rtol=1e-13)


@pytest.mark.parametrize(
    "op,fn",
    [
        ("asin", cmath.asin),
        ("acos", cmath.acos),
        ("asinh", cmath.asinh),
        ("acosh", cmath.acosh),
        ("atanh", cmath.atanh),
        ("atan", cmath.atan),
        ("sinh", cmath.sinh),
        ("cosh", cmath.cosh),
        ("tan", cmath.tan),
    ],
)
def test_complex_functions(op, fn):
    z = np.array([0.5 + 0.5j, -1.5 + 0.25j, 2.0 - 3.0j, -0.1 - 0.2j, 3.5 + 0j, 1e-3 + 2j])
    got = unary(op, z, "complex<f64>")
    want = np.array([fn(complex(v)) for v in z])
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_next_after_steps_one_ulp():
    text = (
        "func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %0 = chlo.next_after %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n"
        "  return %0 : tensor<4xf32>\n}\n"
    )
    x = np.array([1.0, 1.0, 0.0, -0.0], np.float32)
    y = np.array([2.0, 0.0, -1.0, 1.0], np.float32)
    got = hlort.evaluate(parse_stablehlo(text), [x, y])
    np.testing.assert_array_equal(got, np.nextafter(x, y))


def test_top_k_orders_values_with_stable_indices():
    text = (
        "func.func @main(%x: tensor<2x5xf32>) -> (tensor<2x3xf32>, tensor<2x3xi32>) {\n"
        "  %0:2 = chlo.top_k(%x, k = 3) : tensor<2x5xf32> -> (tensor<2x3xf32>, "
        "tensor<2x3xi32>)\n  return %0#0, %0#1 : tensor<2x3xf32>, tensor<2x3xi32>\n}\n"
    )
    x = np.array([[1, 5, 5, 0, 3], [-1, -2, 7, 7, 7]], np.float32)
    values, indices = hlort.evaluate(parse_stablehlo(text), [x])
    np.testing.assert_array_equal(values, [[5, 5, 3], [7, 7, 7]])
    np.testing.assert_array_equal(indices, [[1, 2, 4], [2, 3, 4]])


@pytest.mark.parametrize(
    "element,dtype",
    [
        ("i8", np.int8),
        ("ui16", np.uint16),
        ("i32", np.int32),
        ("i64", np.int64),
        ("ui64", np.uint64),
    ],
)
def test_mulhi_is_the_high_half_of_the_product(element, dtype):
    info = np.iinfo(dtype)
    values = [info.min, info.max, -3 if info.min < 0 else 3, 12345 % int(info.max), 1]
    a = np.array(values, dtype)
    b = np.array(values[::-1], dtype)
    text = (
        f"func.func @main(%a: tensor<5x{element}>, %b: tensor<5x{element}>) -> "
        f'tensor<5x{element}> {{\n  %0 = "chlo.mulhi"(%a, %b) : (tensor<5x{element}>, '
        f"tensor<5x{element}>) -> tensor<5x{element}>\n  return %0 : tensor<5x{element}>\n}}\n"
    )
    got = hlort.evaluate(parse_stablehlo(text), [a, b])
    bits = info.bits
    want = [(int(x) * int(y)) >> bits for x, y in zip(a, b, strict=True)]
    want = [w & ((1 << bits) - 1) if info.min == 0 else w for w in want]
    np.testing.assert_array_equal(got.astype(object), np.array(want, dtype).astype(object))


def test_scan_cumulative_sum_forward_and_reverse():
    def scan(reverse: bool):
        attrs = " attributes {is_reverse = true}" if reverse else ""
        text = (
            "func.func @main(%x: tensor<4xi32>, %z: tensor<i32>) -> (tensor<4xi32>, tensor<i32>)"
            f" {{\n  %0:2 = chlo.scan(%x) inits(%z) dimension=0{attrs} {{\n"
            "  ^bb0(%a: tensor<i32>, %c: tensor<i32>):\n"
            "    %s = stablehlo.add %a, %c : tensor<i32>\n"
            "    stablehlo.return %s, %s : tensor<i32>, tensor<i32>\n"
            "  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)\n"
            "  return %0#0, %0#1 : tensor<4xi32>, tensor<i32>\n}\n"
        )
        x = np.array([1, 2, 3, 4], np.int32)
        return hlort.evaluate(parse_stablehlo(text), [x, np.array(0, np.int32)])

    out, total = scan(False)
    np.testing.assert_array_equal(out, [1, 3, 6, 10])
    assert total == 10
    out, total = scan(True)
    np.testing.assert_array_equal(out, [10, 9, 7, 4])
