"""Constant literals: every element type reads back bit for bit, special values included."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hlort import dtypes
from hlort.errors import ParseError
from hlort.shape import ArrayShape
from hlort.text import parse_module, print_module
from hlort.text.literals import element_strings


def module_text(shape_text: str, literal: str) -> str:
    return (
        f"HloModule m\n\nENTRY %e () -> {shape_text} {{\n"
        f"  ROOT %c = {shape_text} constant({literal})\n}}\n"
    )


def constant(shape_text: str, literal: str):
    return parse_module(module_text(shape_text, literal), verify=False).entry.root.literal


def round_trip(arr: np.ndarray) -> np.ndarray:
    dt = dtypes.from_numpy(arr.dtype)
    shape_text = ArrayShape(dt, arr.shape).to_hlo()
    body = element_strings(arr.reshape(-1), dt)
    literal = body[0] if arr.ndim == 0 else _nest(body, arr.shape)
    return constant(shape_text, literal)


def _nest(items, dims):
    if len(dims) == 1:
        return "{" + ", ".join(items) + "}"
    step = len(items) // dims[0] if dims[0] else 0
    return (
        "{"
        + ", ".join(_nest(items[i * step : (i + 1) * step], dims[1:]) for i in range(dims[0]))
        + "}"
    )


def special_values(dt: dtypes.DType) -> np.ndarray:
    np_dt = dt.numpy
    if dt.is_pred:
        return np.array([True, False, True])
    if dt.is_integer:
        info = dtypes.iinfo(dt)
        return np.array([info.min, info.max, 0, 1, info.max // 3], dtype=np_dt)
    if dt.is_complex:
        comp = special_values(dt.component)
        out = np.empty(comp.size, dtype=np_dt)
        out.real, out.imag = comp, comp[::-1]
        return out
    info = ml_dtypes.finfo(np_dt)
    values = [
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        float(info.max),
        float(info.tiny),
        float(info.smallest_subnormal),
        np.nan,
    ]
    if dt.name not in ("f8e4m3fn",):
        values += [np.inf, -np.inf]
    arr = np.array(values, dtype=np.float64).astype(np_dt)
    width = np.dtype(f"u{np_dt.itemsize}")
    neg_nan = arr[-1:].copy() if dt.name == "f8e4m3fn" else np.array([np.nan]).astype(np_dt)
    neg_nan = (neg_nan.view(width) | width.type(1 << (8 * np_dt.itemsize - 1))).view(np_dt)
    return np.concatenate([arr, neg_nan])


@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=lambda d: d.name)
def test_special_values_round_trip_bitwise(dt):
    arr = special_values(dt)
    back = round_trip(arr)
    assert back.dtype == arr.dtype
    assert back.tobytes() == arr.tobytes()


@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=lambda d: d.name)
def test_random_bit_patterns_round_trip_bitwise(dt):
    """Any bits at all, NaN payloads included (XLA prints them as nan(0x...))."""
    raw = np.random.default_rng(7).integers(0, 256, size=(3, 4, 5 * dt.itemsize), dtype=np.uint8)
    if dt.is_sub_byte_integer:  # s4/u4 bytes hold the value in the low nibble, the rest zero
        raw &= np.uint8(0xF)
    arr = raw[..., :5] % 2 == 1 if dt.is_pred else raw.view(dt.numpy).reshape(3, 4, 5)
    back = round_trip(arr)
    assert back.dtype == arr.dtype and back.tobytes() == arr.tobytes()


@pytest.mark.parametrize("dt", ["f16", "bf16", "f32", "f64"])
def test_nan_payloads_round_trip(dt):
    np_dt = dtypes.from_hlo_name(dt).numpy
    width = np.dtype(f"u{np_dt.itemsize}")
    inf = int(np.array([np.inf]).astype(np_dt).view(width)[0])
    quiet = int(np.array([np.nan]).astype(np_dt).view(width)[0]) & ~inf
    sign = 1 << (8 * np_dt.itemsize - 1)
    patterns = np.array([inf | 1, inf | quiet | 5, sign | inf | quiet | 0x12], dtype=width)
    back = round_trip(patterns.view(np_dt))
    assert back.view(width).tolist() == patterns.tolist()


@pytest.mark.parametrize(
    "shape,literal,expected",
    [
        ("f32[]", "nan", "nan"),
        ("f32[]", "-nan", "-nan"),
        ("f32[]", "+inf", "inf"),
        ("f32[]", "-0", "-0"),
        ("f32[]", "0x1.8p+1", "3"),
        ("f64[]", "1e+300", "1e+300"),
        ("f32[]", "100", "100"),
        ("f32[]", "1.000000000000000001", "1"),
        ("bf16[]", "0.1", "0.1"),
        ("f16[]", "65504", "65504"),
        ("f8e4m3fn[]", "0.001953125", "0.002"),
        ("u64[]", "18446744073709551615", "18446744073709551615"),
        ("s64[]", "-9223372036854775808", "-9223372036854775808"),
        ("pred[]", "true", "true"),
        ("c64[]", "(1, -2.5)", "(1, -2.5)"),
        ("s32[3]", "{ 1,2 ,3 }", "{1, 2, 3}"),
        ("f32[2,2]", "{ /*i0=0*/ {1, 2}, /*i0=1*/ {3, 4} }", "{ { 1, 2 }, { 3, 4 } }"),
        ("f32[2,0]", "{ {}, {} }", "{ {}, {} }"),
        ("s32[4]", "{...}", "{0, 0, 0, 0}"),
    ],
)
def test_literal_spellings(shape, literal, expected):
    value = constant(shape, literal)
    printed = print_module(parse_module(module_text(shape, literal), verify=False))
    assert f"constant({expected})" in printed, printed
    assert value.shape == tuple(int(d) for d in shape[shape.index("[") + 1 : -1].split(",") if d)


@pytest.mark.parametrize(
    "shape,literal,message",
    [
        ("s8[2]", "{1, 128}", "128 is out of range for s8"),
        ("u64[]", "-1", "out of range for u64"),
        ("s64[]", "9223372036854775808", "out of range for s64"),
        ("s32[2]", "{1, 1.5}", "not an integer"),
        ("f32[]", "1e39", "out of range for f32"),
        ("pred[2]", "{true, 2}", "not a pred value"),
        ("f32[3]", "{1, 2}", "has 2 elements; expected 3"),
        ("f32[2,2]", "{1, 2, 3, 4}", "nests braces 1 deep"),
        ("f32[2]", "{1, x}", "'x' is not a f32 value"),
        ("f32[]", "true", "'true' is not a f32 value"),
        ("f32[2]", "{1, 0x1.2.3p1}", "'0x1.2.3p1' is not a f32 value"),
        ("f32[2]", "1", "expected '{' opening the literal"),
        ("c64[]", "1", "expected '(' opening a c64 value"),
    ],
)
def test_bad_literals_point_at_the_problem(shape, literal, message):
    with pytest.raises(ParseError, match=message.replace("(", r"\(").replace("[", r"\[")) as err:
        constant(shape, literal)
    assert err.value.line == 4


def test_bad_element_column_points_at_the_element():
    with pytest.raises(ParseError) as err:
        constant("s8[3]", "{1, 2, 300}")
    line = "  ROOT %c = s8[3] constant({1, 2, 300})"
    assert err.value.column == line.index("300") + 1


def test_large_constant_reads_back():
    arr = np.random.default_rng(1).standard_normal((300, 200)).astype(np.float32)
    assert np.array_equal(round_trip(arr), arr)
