"""dense<...> literals: lists, splats, complex, hex floats, hex blobs of every element type."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hlort.errors import ParseError
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo import parse_mlir
from hlort.importers.stablehlo.dense_literals import decode_dense


def constant(literal: str, type_: str) -> np.ndarray:
    m = parse_mlir(
        f"func.func @main() {{\n  %0 = stablehlo.constant {literal} : {type_}\n  func.return\n}}\n"
    )
    return m.functions["main"].body.blocks[0].ops[0].attrs["value"].value


def tensor(dims, element):
    return ast.TensorType(tuple(dims), ast.ScalarType(element))


def fail(message):
    return ValueError(message)


def test_nested_lists_and_splats():
    np.testing.assert_array_equal(
        constant("dense<[[1, 2], [3, 4]]>", "tensor<2x2xi32>"), [[1, 2], [3, 4]]
    )
    splat = constant("dense<2.5>", "tensor<2x3xf32>")
    assert splat.shape == (2, 3) and splat.dtype == np.float32 and (splat == 2.5).all()
    assert constant("dense<true>", "tensor<i1>").dtype == np.bool_
    assert constant("dense<>", "tensor<0x3xf32>").shape == (0, 3)
    np.testing.assert_array_equal(constant("dense<[true, false]>", "tensor<2xi1>"), [1, 0])


def test_integer_ranges_and_hex_integers():
    big = constant("dense<[18446744073709551615, 0]>", "tensor<2xui64>")
    assert big.dtype == np.uint64 and big[0] == np.iinfo(np.uint64).max
    assert constant("dense<-128>", "tensor<i8>") == -128
    assert constant("dense<0x0123456789ABCDEF>", "tensor<i64>") == 0x0123456789ABCDEF


def test_float_specials_as_hex_bits():
    values = constant("dense<[0x7FC00000, 0x7F800000, 0xFF800000, -0.0, 1.5E-3]>", "tensor<5xf32>")
    assert np.isnan(values[0]) and values[1] == np.inf and values[2] == -np.inf
    assert np.signbit(values[3]) and values[4] == np.float32(1.5e-3)
    bf = constant("dense<[0xFF80, 1.0]>", "tensor<2xbf16>")
    assert bf.dtype == ml_dtypes.bfloat16 and bf[0] == -np.inf
    f64 = constant("dense<[inf, -inf, nan]>", "tensor<3xf64>")
    assert np.isinf(f64[:2]).all() and np.isnan(f64[2])


def test_complex_pairs_and_complex_splat():
    c = constant("dense<[(1.0, -2.0), (0x7F800000, 3.0)]>", "tensor<2xcomplex<f32>>")
    assert c.dtype == np.complex64 and c[0] == 1 - 2j and c[1].real == np.inf
    s = constant("dense<(0.000000e+00,1.000000e+00)>", "tensor<2x2xcomplex<f64>>")
    assert s.shape == (2, 2) and (s == 1j).all()


@pytest.mark.parametrize(
    "dtype,element",
    [
        (np.int8, "i8"),
        (np.uint16, "ui16"),
        (np.int32, "i32"),
        (np.uint64, "ui64"),
        (np.float16, "f16"),
        (ml_dtypes.bfloat16, "bf16"),
        (np.float32, "f32"),
        (np.float64, "f64"),
        (np.complex64, "complex<f32>"),
        (np.complex128, "complex<f64>"),
        (ml_dtypes.float8_e4m3fn, "f8E4M3FN"),
        (ml_dtypes.float8_e5m2, "f8E5M2"),
    ],
)
def test_hex_blobs_of_every_element_type(dtype, element):
    rng = np.random.default_rng(0)
    data = rng.standard_normal(12).astype(np.float64)
    if np.dtype(dtype).kind == "c":
        data = data + 1j * rng.standard_normal(12)
    array = data.astype(dtype).reshape(3, 4)
    blob = '"0x' + array.tobytes().hex().upper() + '"'
    decoded = decode_dense(blob, tensor((3, 4), element), fail)
    assert decoded.dtype == np.dtype(dtype)
    assert decoded.tobytes() == array.tobytes()


def test_hex_blob_specials_splat_and_i1():
    nan_inf = np.array([np.nan, np.inf, -np.inf], np.float32)
    decoded = decode_dense('"0x' + nan_inf.tobytes().hex() + '"', tensor((3,), "f32"), fail)
    assert np.isnan(decoded[0]) and decoded[1] == np.inf and decoded[2] == -np.inf
    splat = decode_dense('"0x0000C03F"', tensor((2, 2), "f32"), fail)
    assert (splat == 1.5).all()
    bytes_i1 = decode_dense('"0x01000101"', tensor((4,), "i1"), fail)
    np.testing.assert_array_equal(bytes_i1, [True, False, True, True])
    packed = decode_dense('"0x06"', tensor((3,), "i1"), fail)  # 0b110, least significant first
    np.testing.assert_array_equal(packed, [False, True, True])
    assert decode_dense('"0x01"', tensor((5,), "i1"), fail).all()


def test_unsupported_element_type_decodes_to_none_and_bad_counts_fail():
    assert decode_dense("[1, 2]", tensor((2,), "f8E3M4"), fail) is None
    np.testing.assert_array_equal(decode_dense("[-8, 7]", tensor((2,), "i4"), fail), [-8, 7])
    with pytest.raises(ValueError, match="needs 3"):
        decode_dense("[1, 2]", tensor((3,), "i32"), fail)
    with pytest.raises(ValueError, match="does not fit"):
        decode_dense('"0x0102"', tensor((3,), "f32"), fail)
    with pytest.raises(ParseError):
        constant("dense<[1, x]>", "tensor<2xi32>")
