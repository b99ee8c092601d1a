"""Interpreter semantics of the binary elementwise ops: arithmetic, max/min, logic, compare."""

import math

import numpy as np
import pytest
from elementwise_helpers import BF16, E4M3, E5M2, INF, NAN, int_kind, run, same

from hlort import dtypes
from hlort.ir import Opcode

# No op may leak a NumPy RuntimeWarning: IEEE special values are results, not errors.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def sample(dtype, dims, offset=0):
    n = math.prod(dims)
    np_dtype = np.dtype(dtype)
    if np_dtype == np.bool_:
        return ((np.arange(n) + offset) % 2 == 0).reshape(dims)
    if int_kind(np_dtype):
        base = np.arange(n) + 1 + offset - (n // 2 if int_kind(np_dtype) == "i" else 0)
        return base.astype(np_dtype).reshape(dims)
    values = np.linspace(0.5, 2.5, n) + offset if n else np.zeros(0)
    if np_dtype.kind == "c":
        values = values + 0.5j
    return values.astype(np_dtype).reshape(dims)


BINARY = {
    Opcode.ADD: "biufc",
    Opcode.MULTIPLY: "biufc",
    Opcode.SUBTRACT: "iufc",
    Opcode.DIVIDE: "iufc",
    Opcode.POWER: "iufc",
    Opcode.REMAINDER: "iuf",
    Opcode.MAXIMUM: "biuf",
    Opcode.MINIMUM: "biuf",
    Opcode.ATAN2: "fc",
    Opcode.AND: "biu",
    Opcode.OR: "biu",
    Opcode.XOR: "biu",
    Opcode.SHIFT_LEFT: "iu",
    Opcode.SHIFT_RIGHT_LOGICAL: "iu",
    Opcode.SHIFT_RIGHT_ARITHMETIC: "iu",
}
_LETTER = {"pred": "b", "sint": "i", "uint": "u", "float": "f", "complex": "c"}
CASES = [
    (op, d)
    for op, letters in BINARY.items()
    for d in dtypes.ALL_DTYPES
    if _LETTER[d.kind] in letters
]


@pytest.mark.parametrize("dims", [(2, 3), (), (0,)], ids=["2x3", "scalar", "empty"])
@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o.value}-{d}" for o, d in CASES])
def test_every_type_gives_declared_array(op, dtype, dims):
    got = run(op, sample(dtype.numpy, dims), sample(dtype.numpy, dims, 1))
    assert isinstance(got, np.ndarray) and got.shape == dims and got.dtype == dtype.numpy


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_compare_every_type(dtype):
    direction = "EQ" if dtype.is_complex else "LE"
    for dims in ((2, 3), (), (0,)):
        a, b = sample(dtype.numpy, dims), sample(dtype.numpy, dims, 1)
        got = run(lambda bld, x, y, d=direction: bld.compare(x, y, d), a, b)
        assert got.dtype == np.bool_ and got.shape == dims


# -- arithmetic -------------------------------------------------------------------------------
@pytest.mark.filterwarnings("error")
def test_integer_arithmetic_wraps_silently():
    i8 = np.int8
    same(
        run(Opcode.ADD, np.array([127, -128], i8), np.array([1, -1], i8)), np.array([-128, 127], i8)
    )
    same(run(Opcode.ADD, np.array(255, np.uint8), np.array(1, np.uint8)), np.array(0, np.uint8))
    same(
        run(Opcode.SUBTRACT, np.array([0], np.uint32), np.array([1], np.uint32)),
        np.array([2**32 - 1], np.uint32),
    )
    same(
        run(Opcode.SUBTRACT, np.array(-(2**31), np.int32), np.array(1, np.int32)),
        np.array(2**31 - 1, np.int32),
    )
    same(
        run(Opcode.MULTIPLY, np.array([300], np.int16), np.array([300], np.int16)),
        np.array([90000 - 65536], np.int16),
    )
    big = np.array(2**62, np.int64)
    same(run(Opcode.MULTIPLY, big, np.array(4, np.int64)), np.array(0, np.int64))


def test_pred_add_is_or_and_multiply_is_and():
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    same(run(Opcode.ADD, a, b), a | b)
    same(run(Opcode.MULTIPLY, a, b), a & b)
    same(run(Opcode.MAXIMUM, a, b), a | b)
    same(run(Opcode.MINIMUM, a, b), a & b)


def test_float_arithmetic_ieee():
    f = np.float32
    a = np.array([1.0, -1.0, 0.0, 1.0, INF, INF, 0.0], f)
    b = np.array([0.0, 0.0, 0.0, -0.0, INF, -INF, -0.0], f)
    same(run(Opcode.DIVIDE, a, b), np.array([INF, -INF, NAN, -INF, NAN, NAN, NAN], f))
    same(run(Opcode.ADD, a, b), np.array([1, -1, 0, 1, INF, NAN, 0.0], f))
    same(run(Opcode.SUBTRACT, np.array([0.0], f), np.array([0.0], f)), np.array([0.0], f))
    same(
        run(Opcode.MULTIPLY, np.array([INF, -2.0], f), np.array([0.0, 0.0], f)),
        np.array([NAN, -0.0], f),
    )


def test_narrow_float_arithmetic_rounds_once():
    one = np.array([1.0], BF16)
    # 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to even.
    same(run(Opcode.ADD, one, np.array([2.0**-8], BF16)), np.array([1.0], BF16))
    same(run(Opcode.ADD, one, np.array([3 * 2.0**-8], BF16)), np.array([1 + 2.0**-6], BF16))
    same(
        run(Opcode.ADD, np.array([65504.0], np.float16), np.array([16.0], np.float16)),
        np.array([INF], np.float16),
    )
    same(
        run(Opcode.MULTIPLY, np.array([448.0], E4M3), np.array([2.0], E4M3)), np.array([NAN], E4M3)
    )  # e4m3fn has no infinity
    same(
        run(Opcode.DIVIDE, np.array([1.0], E5M2), np.array([3.0], E5M2)),
        np.array([1 / 3], np.float32).astype(E5M2),
    )


def test_large_f32_add_is_numpy_add():
    rng = np.random.default_rng(0)
    a = rng.standard_normal(2**20, dtype=np.float32)
    b = rng.standard_normal(2**20, dtype=np.float32)
    assert np.array_equal(run(Opcode.ADD, a, b), a + b)


def test_complex_arithmetic():
    c = np.complex64
    same(run(Opcode.ADD, np.array([1 + 2j], c), np.array([3 - 1j], c)), np.array([4 + 1j], c))
    same(
        run(Opcode.MULTIPLY, np.array([1 + 2j], c), np.array([3 + 4j], c)), np.array([-5 + 10j], c)
    )
    np.testing.assert_allclose(
        run(Opcode.DIVIDE, np.array([1 + 2j]), np.array([3 + 4j])), [(11 + 2j) / 25], rtol=1e-15
    )


@pytest.mark.parametrize("dt", [np.complex64, np.complex128])
def test_complex_multiply_rounds_each_product(dt):
    """(ac - bd) + (ad + bc)i with every product rounded, for any length: NumPy's own loop fuses
    multiply-adds on some CPUs and lengths, which must not leak into the reference."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(dt)
    b = (rng.standard_normal(1000) + 1j * rng.standard_normal(1000)).astype(dt)
    got = run(Opcode.MULTIPLY, a, b)
    same(got.real, a.real * b.real - a.imag * b.imag)
    same(got.imag, a.real * b.imag + a.imag * b.real)


def test_complex_division_edge_cases_follow_xla():
    num = np.array([1 + 1j, complex(1, -2), complex(INF, 0), 1 + 1j, complex(NAN, 0)])
    den = np.array([0j, 0j, 1 + 1j, complex(INF, 0), 0j])
    got = run(Opcode.DIVIDE, num, den)
    same(got[:2], np.array([complex(INF, INF), complex(INF, -INF)]))
    same(got[2:4], np.array([complex(INF, -INF), complex(0.0, 0.0)]))
    assert np.isnan(got[4].real)


def test_float_remainder_is_fmod():
    f = np.float64
    a = np.array([5.5, -5.5, 5.5, 1.0, INF, 3.0, -0.0, -4.0], f)
    b = np.array([2.0, 2.0, -2.0, 0.0, 2.0, INF, 1.0, 2.0], f)
    same(run(Opcode.REMAINDER, a, b), np.array([1.5, -1.5, 1.5, NAN, NAN, 3.0, -0.0, -0.0], f))
    same(run(Opcode.REMAINDER, np.array([7.5], BF16), np.array([2.0], BF16)), np.array([1.5], BF16))


# -- maximum / minimum ------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.float64, E5M2], ids=str)
def test_max_min_propagate_nan_and_order_zeros(dt):
    a = np.array([NAN, 1.0, -0.0, 0.0, -0.0, 0.0, -INF, 2.0], dt)
    b = np.array([1.0, NAN, 0.0, -0.0, -0.0, 0.0, 1.0, -3.0], dt)
    same(run(Opcode.MAXIMUM, a, b), np.array([NAN, NAN, 0.0, 0.0, -0.0, 0.0, 1.0, 2.0], dt))
    same(run(Opcode.MINIMUM, a, b), np.array([NAN, NAN, -0.0, -0.0, -0.0, 0.0, -INF, -3.0], dt))


def test_integer_max_min():
    a = np.array([-5, 3, 2**31 - 1], np.int32)
    b = np.array([2, -7, -(2**31)], np.int32)
    same(run(Opcode.MAXIMUM, a, b), np.array([2, 3, 2**31 - 1], np.int32))
    same(run(Opcode.MINIMUM, a, b), np.array([-5, -7, -(2**31)], np.int32))
    u = np.array([255, 0], np.uint8)
    same(run(Opcode.MAXIMUM, u, np.array([1, 1], np.uint8)), np.array([255, 1], np.uint8))


# -- logic ------------------------------------------------------------------------------------
def test_bitwise_ops():
    a, b = np.array([0b1100, -1], np.int8), np.array([0b1010, 5], np.int8)
    same(run(Opcode.AND, a, b), np.array([0b1000, 5], np.int8))
    same(run(Opcode.OR, a, b), np.array([0b1110, -1], np.int8))
    same(run(Opcode.XOR, a, b), np.array([0b0110, -6], np.int8))
    p, q = np.array([True, True, False]), np.array([True, False, False])
    same(run(Opcode.XOR, p, q), np.array([False, True, False]))
    same(
        run(Opcode.AND, np.array(2**64 - 1, np.uint64), np.array(2**63, np.uint64)),
        np.array(2**63, np.uint64),
    )


# -- compare ----------------------------------------------------------------------------------
def cmp(direction, ctype=None):
    return lambda b, x, y: b.compare(x, y, direction, ctype)


def test_compare_float_is_ieee():
    a = np.array([NAN, NAN, 1.0, -0.0, 1.0, -INF], np.float32)
    b = np.array([NAN, 1.0, NAN, 0.0, 2.0, INF], np.float32)
    same(run(cmp("EQ"), a, b), np.array([False, False, False, True, False, False]))
    same(run(cmp("NE"), a, b), np.array([True, True, True, False, True, True]))
    same(run(cmp("LT"), a, b), np.array([False, False, False, False, True, True]))
    same(run(cmp("GE", "FLOAT"), a, b), np.array([False, False, False, True, False, False]))


TOTAL = [-NAN, -INF, -1.0, -1e-30, -0.0, 0.0, 1e-30, 1.0, INF, NAN]


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.float64], ids=str)
def test_compare_totalorder(dt):
    values = np.array(TOTAL, dt)
    values[0] = -np.abs(values[0])  # make sure the first NaN carries the sign bit
    values[-1] = np.abs(values[-1])
    n = len(values)
    a, b = np.repeat(values, n), np.tile(values, n)
    i, j = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    if dt != np.float64:  # 1e-30 is zero in f16: keep only distinct values
        distinct = [
            k
            for k in range(n)
            if k in (0, n - 1)
            or values[k] != values[k - 1]
            or np.signbit(values[k]) != np.signbit(values[k - 1])
        ]
        keep = np.isin(i, distinct) & np.isin(j, distinct)
        a, b, i, j = a[keep], b[keep], i[keep], j[keep]
    for direction, expected in (
        ("LT", i < j),
        ("LE", i <= j),
        ("EQ", i == j),
        ("NE", i != j),
        ("GT", i > j),
        ("GE", i >= j),
    ):
        same(run(cmp(direction, "TOTALORDER"), a, b), expected)


def test_compare_totalorder_e4m3fn():
    a = np.array([-0.0, 448.0, -448.0, NAN], E4M3)
    b = np.array([0.0, NAN, -NAN, NAN], E4M3)
    b[2] = -np.abs(b[2])
    same(run(cmp("LT", "TOTALORDER"), a, b), np.array([True, True, False, False]))
    same(run(cmp("EQ", "TOTALORDER"), a, b), np.array([False, False, False, True]))


def test_compare_integers_and_pred():
    s = np.array([-1, 1], np.int8)
    same(run(cmp("LT", "SIGNED"), s, s[::-1].copy()), np.array([True, False]))
    u = np.array([255, 1], np.uint8)
    same(run(cmp("GT"), u, u[::-1].copy()), np.array([True, False]))
    same(run(cmp("LT"), np.array([False, True]), np.array([True, True])), np.array([True, False]))
    big = np.array([2**63 - 1, -(2**63)], np.int64)
    same(run(cmp("GT"), big, big[::-1].copy()), np.array([True, False]))


def test_compare_complex():
    a = np.array([1 + 2j, 1 + 2j, complex(NAN, 0)], np.complex64)
    b = np.array([1 + 2j, 1 - 2j, complex(NAN, 0)], np.complex64)
    same(run(cmp("EQ"), a, b), np.array([True, False, False]))
    same(run(cmp("NE"), a, b), np.array([False, True, True]))


# -- complex, atan2, power --------------------------------------------------------------------
def test_complex_compose():
    re = np.array([1.0, -0.0, NAN], np.float32)
    im = np.array([2.0, NAN, -0.0], np.float32)
    same(
        run(Opcode.COMPLEX, re, im),
        np.array([1 + 2j, complex(-0.0, NAN), complex(NAN, -0.0)], np.complex64),
    )
    got = run(Opcode.COMPLEX, np.array(INF), np.array(-INF))
    same(got, np.array(complex(INF, -INF)))


def test_atan2_signed_zero_and_infinity_cases():
    y = np.array([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INF, INF, 1.0, NAN])
    x = np.array([-0.0, -0.0, 0.0, 0.0, 0.0, -INF, INF, -INF, INF, 1.0])
    pi = math.pi
    expected = np.array([pi, -pi, 0.0, -0.0, pi / 2, -pi, pi / 4, 3 * pi / 4, 0.0, NAN])
    same(run(Opcode.ATAN2, y, x), expected)
    got = run(Opcode.ATAN2, y[:6].astype(np.float32), x[:6].astype(np.float32))
    same(got, expected[:6].astype(np.float32))


def test_atan2_complex_agrees_with_real_on_reals():
    y = np.array([1.0 + 0j, 0.5 + 0j])
    x = np.array([1.0 + 0j, 2.0 + 0j])
    np.testing.assert_allclose(run(Opcode.ATAN2, y, x), np.arctan2(y.real, x.real) + 0j, atol=1e-15)


def test_float_power():
    a = np.array([2.0, -8.0, 0.0, NAN, 1.0, 0.0, -0.0, -2.0, INF])
    b = np.array([10.0, 1 / 3, 0.0, 0.0, NAN, -1.0, -1.0, 3.0, -1.0])
    same(run(Opcode.POWER, a, b), np.array([1024, NAN, 1, 1, 1, INF, -INF, -8, 0.0]))
    same(run(Opcode.POWER, np.array([3.0], BF16), np.array([2.0], BF16)), np.array([9.0], BF16))


def test_complex_power():
    a = np.array([1j, 0j, 1 + 0j, 2 + 0j, complex(INF, 0), complex(INF, 0)])
    b = np.array([2 + 0j, 0j, complex(NAN, NAN), 0.5 + 0j, 2 + 0j, -2 + 0j])
    got = run(Opcode.POWER, a, b)
    np.testing.assert_allclose(got[0], -1 + 0j, atol=1e-15)
    same(got[1:3], np.array([1 + 0j, 1 + 0j]))
    np.testing.assert_allclose(got[3], math.sqrt(2))
    assert got[4] == complex(INF, 0) and got[5] == 0
