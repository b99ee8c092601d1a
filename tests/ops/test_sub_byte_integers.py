"""s4/u4 in the interpreter: every value pair against a 4-bit reference written from the spec,
and conversions and bitcasts against values JAX's CPU (XLA) gives (jax 0.10.2).

One difference from JAX's CPU is deliberate: popcnt(s4 -1) is 4 here (StableHLO: the number of
set bits of the 4-bit value); XLA's CPU counts the sign-extended byte and gives 8, wrapped to -8.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from hlort import dtypes
from hlort.interpreter import evaluate
from hlort.text import parse_module

S4, U4 = ml_dtypes.int4, ml_dtypes.uint4
S4_VALUES = list(range(-8, 8))
U4_VALUES = list(range(16))


def wrap(v: int, signed: bool) -> int:
    v &= 0xF
    return v - 16 if signed and v >= 8 else v


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def reference_binary(op: str, a: int, b: int, signed: bool):
    amount = b & 0xF  # shift amounts are read as unsigned
    if op == "add":
        return wrap(a + b, signed)
    if op == "subtract":
        return wrap(a - b, signed)
    if op == "multiply":
        return wrap(a * b, signed)
    if op == "divide":
        if b == 0:
            return wrap(-1, signed)
        return wrap(_trunc_div(a, b), signed)  # -8 / -1 = 8 wraps to -8
    if op == "remainder":
        return a if b == 0 else wrap(a - b * _trunc_div(a, b), signed)
    if op == "maximum":
        return max(a, b)
    if op == "minimum":
        return min(a, b)
    if op == "and":
        return wrap(a & b, signed)
    if op == "or":
        return wrap(a | b, signed)
    if op == "xor":
        return wrap(a ^ b, signed)
    if op == "shift-left":
        return 0 if amount >= 4 else wrap(a << amount, signed)
    if op == "shift-right-logical":
        return 0 if amount >= 4 else wrap((a & 0xF) >> amount, signed)
    if op == "shift-right-arithmetic":
        bits = wrap(a, True)  # the bit pattern read as signed, for u4 too
        return wrap(bits >> min(amount, 3), signed)
    if op == "power":
        if signed and b < 0:
            return 1 if a == 1 else 0
        return wrap(a**b, signed)
    raise AssertionError(op)


def reference_unary(op: str, a: int, signed: bool) -> int:
    if op == "negate":
        return wrap(-a, signed)
    if op == "abs":
        return wrap(abs(a), signed)
    if op == "sign":
        return (a > 0) - (a < 0)
    if op == "not":
        return wrap(~a, signed)
    if op == "popcnt":
        return bin(a & 0xF).count("1")
    if op == "count-leading-zeros":
        return 4 - (a & 0xF).bit_length()
    raise AssertionError(op)


def run(text: str, *args):
    return evaluate(parse_module(text), args)


def pairs(values: list[int], np_type) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([x for x in values for _ in values], np_type)
    b = np.array([y for _ in values for y in values], np_type)
    return a, b


BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "remainder",
    "maximum",
    "minimum",
    "and",
    "or",
    "xor",
    "shift-left",
    "shift-right-logical",
    "shift-right-arithmetic",
    "power",
]


@pytest.mark.parametrize("ty", ["s4", "u4"])
@pytest.mark.parametrize("op", BINARY)
def test_binary_every_pair(op, ty):
    signed = ty == "s4"
    values = S4_VALUES if signed else U4_VALUES
    a, b = pairs(values, S4 if signed else U4)
    n = a.size
    text = (
        f"HloModule m\nENTRY e {{\n  a = {ty}[{n}] parameter(0)\n  b = {ty}[{n}] parameter(1)\n"
        f"  ROOT r = {ty}[{n}] {op}(a, b)\n}}\n"
    )
    out = run(text, a, b)
    assert out.dtype == (S4 if signed else U4)
    want = [reference_binary(op, int(x), int(y), signed) for x, y in zip(a, b, strict=True)]
    assert out.astype(np.int64).tolist() == want


@pytest.mark.parametrize("ty", ["s4", "u4"])
@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
def test_compare_every_pair(direction, ty):
    signed = ty == "s4"
    a, b = pairs(S4_VALUES if signed else U4_VALUES, S4 if signed else U4)
    n = a.size
    text = (
        f"HloModule m\nENTRY e {{\n  a = {ty}[{n}] parameter(0)\n  b = {ty}[{n}] parameter(1)\n"
        f"  ROOT r = pred[{n}] compare(a, b), direction={direction}\n}}\n"
    )
    py = {"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}[direction]
    want = [eval(f"{int(x)} {py} {int(y)}") for x, y in zip(a, b, strict=True)]
    assert run(text, a, b).tolist() == want


@pytest.mark.parametrize(
    "ty,op",
    [(t, o) for t in ("s4", "u4") for o in ("negate", "not", "popcnt", "count-leading-zeros")]
    + [("s4", "abs"), ("s4", "sign")],
)
def test_unary_every_value(op, ty):
    signed = ty == "s4"
    values = S4_VALUES if signed else U4_VALUES
    text = (
        f"HloModule m\nENTRY e {{\n  a = {ty}[16] parameter(0)\n  ROOT r = {ty}[16] {op}(a)\n}}\n"
    )
    out = run(text, np.array(values, S4 if signed else U4))
    assert out.astype(np.int64).tolist() == [reference_unary(op, v, signed) for v in values]


def convert(src: str, to: str, values, np_src) -> list:
    n = len(values)
    text = (
        f"HloModule m\nENTRY e {{\n  a = {src}[{n}] parameter(0)\n"
        f"  ROOT r = {to}[{n}] convert(a)\n}}\n"
    )
    return run(text, np.array(values, np_src)).tolist()


SPECIALS = [100.0, -100.0, np.nan, 7.5, -8.5, 15.5, 16.0, -0.9, np.inf, -np.inf]


@pytest.mark.parametrize("src", ["f16", "bf16", "f32", "f64"])
def test_float_to_4_bits_saturates(src):
    """As JAX's CPU: truncation toward zero, NaN -> 0, out-of-range values saturate."""
    np_src = dtypes.from_hlo_name(src).numpy
    assert convert(src, "s4", SPECIALS, np_src) == [7, -8, 0, 7, -8, 7, 7, 0, 7, -8]
    assert convert(src, "u4", SPECIALS, np_src) == [15, 0, 0, 7, 0, 15, 15, 0, 15, 0]


def test_complex_to_4_bits_saturates_the_real_part():
    values = [complex(-np.inf, 1), complex(np.nan, 0), complex(9.5, 3), complex(-2.5, 9)]
    assert convert("c64", "s4", values, np.complex64) == [-8, 0, 7, -2]


def test_integer_to_4_bits_wraps():
    ints = [9, 17, -9, 300, -1]
    assert convert("s32", "s4", ints, np.int32) == [-7, 1, 7, -4, -1]
    assert convert("s32", "u4", ints, np.int32) == [9, 1, 7, 12, 15]
    assert convert("s4", "u4", [-8, -1, 0, 7], S4) == [8, 15, 0, 7]
    assert convert("u4", "s4", [15, 8, 7], U4) == [-1, -8, 7]
    assert convert("pred", "s4", [True, False], np.bool_) == [1, 0]


def test_4_bits_to_other_types_keeps_the_value():
    assert convert("s4", "f32", [-8, -1, 0, 7], S4) == [-8.0, -1.0, 0.0, 7.0]
    assert convert("u4", "f16", [15, 8, 0], U4) == [15.0, 8.0, 0.0]
    assert convert("s4", "s64", [-8, 7], S4) == [-8, 7]
    assert convert("s4", "u8", [-1, 7], S4) == [255, 7]
    assert convert("s4", "pred", [-8, 0, 1], S4) == [True, False, True]
    assert convert("s4", "c64", [-3], S4) == [-3 + 0j]


def bitcast(src: str, src_dims: str, to: str, to_dims: str, value):
    text = (
        f"HloModule m\nENTRY e {{\n  a = {src}[{src_dims}] parameter(0)\n"
        f"  ROOT r = {to}[{to_dims}] bitcast-convert(a)\n}}\n"
    )
    return run(text, value)


def test_bitcast_packs_element_zero_in_the_low_nibble():
    """The values JAX's CPU gives for the same bitcasts."""
    out = bitcast("s4", "2,2", "u8", "2", np.array([[1, 2], [-1, -8]], S4))
    assert out.tolist() == [0x21, 0x8F]
    out = bitcast("u8", "2", "s4", "2,2", np.array([0x21, 0xF8], np.uint8))
    assert out.dtype == S4 and out.tolist() == [[1, 2], [-8, -1]]
    out = bitcast("s4", "1,4", "f16", "1", np.array([[1, 2, 3, 4]], S4))
    assert out.tolist() == [3.564453125]  # f16 bits 0x4321
    out = bitcast("s4", "4", "u4", "4", np.array([-8, -1, 0, 7], S4))
    assert out.dtype == U4 and out.tolist() == [8, 15, 0, 7]


@pytest.mark.parametrize("wide", ["u8", "s16", "f32", "s64"])
def test_bitcast_round_trip(wide):
    bits = dtypes.from_hlo_name(wide).bits
    r = bits // 4
    x = np.array(np.arange(3 * r).reshape(3, r) % 16 - 8, S4)
    out = bitcast("s4", f"3,{r}", wide, "3", x)
    back = bitcast(wide, "3", "s4", f"3,{r}", out)
    assert back.dtype == S4 and back.tolist() == x.tolist()


@pytest.mark.parametrize("wide, dims", [("u8", "2"), ("s16", "4"), ("f32", "8")])
def test_bitcast_of_a_scalar_unpacks_to_one_dimension(wide, dims):
    """A 0-d wide value -> s4[r]: the result is r nibbles, not [1, r] (NumPy's
    ascontiguousarray turns a 0-d array into a 1-d one)."""
    np_type = dtypes.from_hlo_name(wide).numpy
    x = np.frombuffer(bytes([0x21, 0x43, 0x65, 0x87])[: np_type.itemsize], np_type).reshape(())
    out = bitcast(wide, "", "s4", dims, x)
    assert out.shape == (int(dims),) and out.tolist() == [1, 2, 3, 4, 5, 6, 7, -8][: int(dims)]
    back = bitcast("s4", dims, wide, "", out)
    assert back.shape == () and back.tobytes() == x.tobytes()


def test_iota_and_reduce_wrap():
    text = (
        "HloModule m\nadd {\n  a = s4[] parameter(0)\n  b = s4[] parameter(1)\n"
        "  ROOT s = s4[] add(a, b)\n}\nENTRY e {\n  p = s4[3] parameter(0)\n"
        "  z = s4[] constant(0)\n  s = s4[] reduce(p, z), dimensions={0}, to_apply=add\n"
        "  i = u4[20] iota(), iota_dimension=0\n  ROOT r = (s4[], u4[20]) tuple(s, i)\n}\n"
    )
    total, line = run(text, np.array([7, 7, 7], S4))
    assert int(total) == 5  # 21 wraps to 5, as on JAX's CPU
    assert line.tolist() == list(range(16)) + [0, 1, 2, 3]


def test_dot_accumulates_and_wraps():
    text = (
        "HloModule m\nENTRY e {\n  p = s4[2,2] parameter(0)\n  q = s4[2,2] parameter(1)\n"
        "  ROOT r = s4[2,2] dot(p, q), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n"
    )
    out = run(text, np.array([[7, 7], [1, 2]], S4), np.array([[7, 1], [7, 1]], S4))
    assert out.tolist() == [[2, -2], [5, 3]]  # JAX's CPU
