"""i4/ui4 in StableHLO and s4/u4 in HLO text: real 4-bit types (one element per byte), not the
byte types the importer still uses for i2/ui2."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hlort import dtypes
from hlort.errors import HlortError
from hlort.importers.stablehlo import parse_stablehlo
from hlort.interpreter import evaluate
from hlort.text import parse_module, print_module


def test_i4_parameters_constants_and_wrap_around():
    module = parse_stablehlo(
        """
func.func @main(%x: tensor<4xi4>, %y: tensor<3xui4>) -> (tensor<4xi4>, tensor<3xui4>) {
  %c = stablehlo.constant dense<[1, 1, -8, 7]> : tensor<4xi4>
  %0 = stablehlo.add %x, %c : tensor<4xi4>
  %1 = stablehlo.negate %y : tensor<3xui4>
  return %0, %1 : tensor<4xi4>, tensor<3xui4>
}
"""
    )
    params = module.entry.parameters
    assert [p.shape.dtype for p in params] == [dtypes.S4, dtypes.U4]
    s, u = evaluate(
        module, [np.array([7, -8, -1, 7], ml_dtypes.int4), np.array([0, 8, 15], ml_dtypes.uint4)]
    )
    assert s.dtype == ml_dtypes.int4 and s.tolist() == [-8, -7, 7, -2]
    assert u.dtype == ml_dtypes.uint4 and u.tolist() == [0, 8, 1]  # the corpus' negate_qi8.mlir


def test_bit_level_ops_on_i4_use_4_bits():
    module = parse_stablehlo(
        """
func.func @main(%x: tensor<2xi4>) -> (tensor<2xi4>, tensor<2xi4>, tensor<i8>) {
  %0 = stablehlo.popcnt %x : tensor<2xi4>
  %1 = stablehlo.count_leading_zeros %x : tensor<2xi4>
  %2 = stablehlo.bitcast_convert %x : (tensor<2xi4>) -> tensor<i8>
  return %0, %1, %2 : tensor<2xi4>, tensor<2xi4>, tensor<i8>
}
"""
    )
    pop, clz, packed = evaluate(module, [np.array([-1, 1], ml_dtypes.int4)])
    assert pop.tolist() == [4, 1]
    assert clz.tolist() == [0, 3]
    assert int(packed) == 0x1F  # element 0 in the low nibble


def test_hlo_text_round_trips_s4_and_u4():
    text = (
        "HloModule m\nENTRY e {\n  a = s4[4] constant({-8, 7, 0, -1})\n"
        "  b = u4[2] constant({15, 0})\n  ROOT t = (s4[4], u4[2]) tuple(a, b)\n}\n"
    )
    module = parse_module(text)
    printed = print_module(module)
    assert "s4[4]{0} constant({-8, 7, 0, -1})" in printed
    assert "u4[2]{0} constant({15, 0})" in printed
    again = parse_module(printed)
    a, b = evaluate(again, [])
    assert a.tolist() == [-8, 7, 0, -1] and b.tolist() == [15, 0]


@pytest.mark.parametrize("literal", ["s4[] constant(8)", "s4[] constant(-9)", "u4[] constant(16)"])
def test_out_of_range_literals_are_errors(literal):
    with pytest.raises(HlortError, match="out of range"):
        parse_module(f"HloModule m\nENTRY e {{\n  ROOT c = {literal}\n}}\n")


def test_xla_element_size_layouts_parse():
    """XLA prints s4 layouts with their element size (``{0:E(4)}``)."""
    module = parse_module("HloModule m\nENTRY e {\n  ROOT p = s4[8]{0:E(4)} parameter(0)\n}\n")
    assert module.entry.root.shape.dtype is dtypes.S4


def test_i4_hex_blobs_hold_one_value_per_byte():
    """MLIR stores i4 one element per byte; a sign-extended byte still becomes a clean nibble."""
    module = parse_stablehlo(
        """
func.func @main() -> (tensor<3xi4>, tensor<2xui4>) {
  %a = stablehlo.constant dense<"0xFF0701"> : tensor<3xi4>
  %b = stablehlo.constant dense<"0x0F"> : tensor<2xui4>
  return %a, %b : tensor<3xi4>, tensor<2xui4>
}
"""
    )
    a, b = evaluate(module, [])
    assert a.tolist() == [-1, 7, 1] and a.view(np.uint8).tolist() == [15, 7, 1]
    assert b.tolist() == [15, 15]


def test_npz_carries_4_bit_integers_as_low_nibble_bytes(tmp_path):
    from hlort.runtime.npz_io import from_storable, raw_bits_dtype, to_storable
    from hlort.shape import ArrayShape

    shape = ArrayShape(dtypes.S4, (3,))
    x = np.array([-1, -8, 7], ml_dtypes.int4)
    stored = to_storable(x)
    assert stored.dtype == np.uint8 and stored.tolist() == [15, 8, 7]
    assert raw_bits_dtype(dtypes.S4) == np.uint8
    assert from_storable(stored, shape, "arg0").tolist() == [-1, -8, 7]
    with pytest.raises(HlortError, match="low nibble"):
        from_storable(np.array([0xFF, 0, 0], np.uint8), shape, "arg0")


@pytest.mark.parametrize(
    "t, np_type, a, b, want",
    [
        ("i4", ml_dtypes.int4, [7, -8, -1, 3, -8], [7, 7, -1, -3, -8], [3, -4, 0, -1, 4]),
        ("ui4", ml_dtypes.uint4, [15, 8, 1, 3, 15], [15, 2, 1, 5, 1], [14, 1, 0, 0, 0]),
    ],
)
def test_chlo_mulhi_of_4_bit_integers_is_the_high_nibble(t, np_type, a, b, want):
    """The high 4 bits of the 8-bit product (s4: 7 * 7 = 0x31 -> 3, -8 * -8 = 64 -> 4)."""
    module = parse_stablehlo(
        f"func.func @main(%a: tensor<5x{t}>, %b: tensor<5x{t}>) -> tensor<5x{t}> {{\n"
        f"  %0 = chlo.mulhi %a, %b : tensor<5x{t}>, tensor<5x{t}> -> tensor<5x{t}>\n"
        f"  return %0 : tensor<5x{t}>\n}}\n"
    )
    out = evaluate(module, [np.array(a, np_type), np.array(b, np_type)])
    assert out.dtype == np_type and out.tolist() == want


def test_bitcast_convert_between_i4_and_i1_moves_the_four_bits():
    """StableHLO's bitcast to and from i1 (bit i at element i) for 4-bit integers too."""
    module = parse_stablehlo(
        """
func.func @main(%x: tensor<3xi4>, %y: tensor<2x4xi1>) -> (tensor<3x4xi1>, tensor<2xui4>) {
  %0 = stablehlo.bitcast_convert %x : (tensor<3xi4>) -> tensor<3x4xi1>
  %1 = stablehlo.bitcast_convert %y : (tensor<2x4xi1>) -> tensor<2xui4>
  return %0, %1 : tensor<3x4xi1>, tensor<2xui4>
}
"""
    )
    bits = np.array([[True, False, True, True], [False, False, False, True]])
    to_bits, value = evaluate(module, [np.array([-8, 5, -1], ml_dtypes.int4), bits])
    assert to_bits.tolist() == [[0, 0, 0, 1], [1, 0, 1, 0], [1, 1, 1, 1]]
    assert value.dtype == ml_dtypes.uint4 and value.tolist() == [13, 8]
