"""Interpreter semantics of the unary elementwise ops (XLA's), on every element type they take."""

import math

import numpy as np
import pytest
from elementwise_helpers import BF16, E4M3, E5M2, INF, NAN, int_kind, run, same

from hlort import Builder, dtypes, shape
from hlort.ir import Opcode

# No op may leak a NumPy RuntimeWarning: IEEE special values are results, not errors.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def sample(dtype, dims=(2, 3)):
    """Deterministic values valid for ``dtype`` (negative ones only where the type has them)."""
    n = math.prod(dims)
    np_dtype = np.dtype(dtype)
    if np_dtype == np.bool_:
        return (np.arange(n) % 2 == 0).reshape(dims)
    if int_kind(np_dtype):
        base = np.arange(n) - (n // 2 if int_kind(np_dtype) == "i" else 0)
        return base.astype(np_dtype).reshape(dims)
    values = np.linspace(-1.75, 2.5, n) if n else np.zeros(0)
    if np_dtype.kind == "c":
        values = values + 0.5j
    return values.astype(np_dtype).reshape(dims)


UNARY = {
    Opcode.ABS: "sfc",
    Opcode.NEGATE: "iufc",
    Opcode.SIGN: "sfc",
    Opcode.NOT: "biu",
    Opcode.POPCNT: "iu",
    Opcode.CLZ: "iu",
    Opcode.IS_FINITE: "f",
    Opcode.REAL: "fc",
    Opcode.IMAG: "fc",
    Opcode.ERF: "f",
    Opcode.FLOOR: "f",
    Opcode.CEIL: "f",
    Opcode.ROUND_NEAREST_AFZ: "f",
    Opcode.ROUND_NEAREST_EVEN: "f",
    Opcode.COPY: "biufc",
    **{
        op: "fc"
        for op in (
            Opcode.EXP,
            Opcode.EXPM1,
            Opcode.LOG,
            Opcode.LOG1P,
            Opcode.LOGISTIC,
            Opcode.SQRT,
            Opcode.RSQRT,
            Opcode.CBRT,
            Opcode.TANH,
            Opcode.SINE,
            Opcode.COSINE,
            Opcode.TAN,
        )
    },
}
_LETTER = {"pred": "b", "sint": "si", "uint": "u", "float": "f", "complex": "c"}


def takes(letters, dtype):
    return any(letter in letters for letter in _LETTER[dtype.kind])


CASES = [(op, d) for op, letters in UNARY.items() for d in dtypes.ALL_DTYPES if takes(letters, d)]


@pytest.mark.parametrize("dims", [(2, 3), (), (0,)], ids=["2x3", "scalar", "empty"])
@pytest.mark.parametrize("op, dtype", CASES, ids=[f"{o.value}-{d}" for o, d in CASES])
def test_every_type_gives_declared_array(op, dtype, dims):
    x = sample(dtype.numpy, dims)
    got = run(op, x)
    b = Builder("s")
    expected = b.op(op, [b.parameter(shape.array(dtype, dims))]).shape
    assert isinstance(got, np.ndarray) and got.shape == dims
    assert got.dtype == expected.dtype.numpy


# -- integer and sign-like ops ----------------------------------------------------------------
@pytest.mark.filterwarnings("error")
def test_abs_and_negate_wrap():
    same(run(Opcode.ABS, np.array([-128, -1, 0, 5], np.int8)), np.array([-128, 1, 0, 5], np.int8))
    i32 = np.array([-(2**31), 2**31 - 1], np.int32)
    same(run(Opcode.NEGATE, i32), np.array([-(2**31), -(2**31) + 1], np.int32))
    same(run(Opcode.NEGATE, np.array([0, 1, 255], np.uint8)), np.array([0, 255, 1], np.uint8))
    same(run(Opcode.ABS, np.array(-(2**63), np.int64)), np.array(-(2**63), np.int64))


def test_abs_negate_floats_and_complex():
    x = np.array([-0.0, 0.0, -INF, NAN, -2.5], np.float32)
    same(run(Opcode.ABS, x), np.array([0.0, 0.0, INF, NAN, 2.5], np.float32))
    same(run(Opcode.NEGATE, x), np.array([0.0, -0.0, INF, NAN, 2.5], np.float32))
    same(run(Opcode.NEGATE, np.array([1.5, -0.0], BF16)), np.array([-1.5, 0.0], BF16))
    same(run(Opcode.ABS, np.array([3 + 4j, -0.0 - 0j], np.complex64)), np.array([5, 0], np.float32))
    same(run(Opcode.ABS, np.array(1e300 + 1e300j)), np.array(math.sqrt(2) * 1e300))


def test_sign():
    same(run(Opcode.SIGN, np.array([-5, 0, 7], np.int32)), np.array([-1, 0, 1], np.int32))
    same(run(Opcode.SIGN, np.array([-128, 127], np.int8)), np.array([-1, 1], np.int8))
    x = np.array([-2.0, -0.0, 0.0, 3.0, NAN, -INF, 1e-45], np.float32)
    same(run(Opcode.SIGN, x), np.array([-1, -0.0, 0.0, 1, NAN, -1, 1], np.float32))
    same(run(Opcode.SIGN, np.array([-0.0, 2.0], E4M3)), np.array([-0.0, 1.0], E4M3))
    got = run(Opcode.SIGN, np.array([3 + 4j, 0j, -2j], np.complex64))
    same(got, np.array([0.6 + 0.8j, 0j, -1j], np.complex64))


def test_not():
    same(run(Opcode.NOT, np.array([True, False])), np.array([False, True]))
    same(run(Opcode.NOT, np.array([0, -1, 5], np.int8)), np.array([-1, 0, -6], np.int8))
    same(run(Opcode.NOT, np.array([0, 1], np.uint16)), np.array([65535, 65534], np.uint16))


def test_is_finite():
    for dt in (np.float16, BF16, np.float32, np.float64, E5M2):
        x = np.array([1.0, INF, -INF, NAN, -0.0], dt)
        same(run(Opcode.IS_FINITE, x), np.array([True, False, False, False, True]))
    same(run(Opcode.IS_FINITE, np.array([448.0, NAN], E4M3)), np.array([True, False]))


def test_real_imag():
    z = np.array([1 + 2j, complex(-0.0, -0.0), complex(NAN, INF)], np.complex64)
    same(run(Opcode.REAL, z), np.array([1, -0.0, NAN], np.float32))
    same(run(Opcode.IMAG, z), np.array([2, -0.0, INF], np.float32))
    x = np.array([-1.5, NAN], np.float64)
    same(run(Opcode.REAL, x), x)
    same(run(Opcode.IMAG, x), np.array([0.0, 0.0]))
    same(run(Opcode.IMAG, np.array(2.0, BF16)), np.array(0.0, BF16))


def test_copy_is_a_new_array():
    x = np.array([1, 2, 3], np.int16)
    got = run(Opcode.COPY, x)
    same(got, x)
    assert not np.shares_memory(got, x)


# -- rounding ---------------------------------------------------------------------------------
ROUND_IN = [
    -2.5,
    -1.5,
    -0.5,
    -0.4,
    -0.0,
    0.0,
    0.4,
    0.5,
    1.5,
    2.5,
    0.49999999999999994,
    INF,
    -INF,
    NAN,
]
ROUND_OUT = {
    Opcode.FLOOR: [-3, -2, -1, -1, -0.0, 0, 0, 0, 1, 2, 0, INF, -INF, NAN],
    Opcode.CEIL: [-2, -1, -0.0, -0.0, -0.0, 0, 1, 1, 2, 3, 1, INF, -INF, NAN],
    Opcode.ROUND_NEAREST_AFZ: [-3, -2, -1, -0.0, -0.0, 0, 0, 1, 2, 3, 0, INF, -INF, NAN],
    Opcode.ROUND_NEAREST_EVEN: [-2, -2, -0.0, -0.0, -0.0, 0, 0, 0, 2, 2, 0, INF, -INF, NAN],
}


@pytest.mark.parametrize("op", list(ROUND_OUT), ids=lambda o: o.value)
def test_rounding_f64(op):
    same(run(op, np.array(ROUND_IN)), np.array(ROUND_OUT[op]))


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, E5M2], ids=str)
def test_rounding_narrow(dt):
    x = np.array([2.5, -0.5, 1.5, -2.5, -0.0], dt)
    same(run(Opcode.ROUND_NEAREST_EVEN, x), np.array([2, -0.0, 2, -2, -0.0], dt))
    same(run(Opcode.ROUND_NEAREST_AFZ, x), np.array([3, -1, 2, -3, -0.0], dt))


def test_round_afz_just_below_half_f32():
    below = np.nextafter(np.float32(0.5), np.float32(0))
    x = np.array([below, -below, 8388607.5, 16777216.0], np.float32)
    same(run(Opcode.ROUND_NEAREST_AFZ, x), np.array([0, -0.0, 8388608, 16777216], np.float32))


# -- transcendental ---------------------------------------------------------------------------
def reference(fn, x, dt):
    """fn in Python floats (libm, f64), rounded to ``dt`` through f32 when narrower."""
    wide = np.array([fn(float(v)) for v in np.asarray(x, np.float64)])
    if np.dtype(dt).itemsize < 4:
        return wide.astype(np.float32).astype(dt)
    return wide.astype(dt)


MATH = {
    Opcode.EXP: math.exp,
    Opcode.EXPM1: math.expm1,
    Opcode.LOG: math.log,
    Opcode.LOG1P: math.log1p,
    Opcode.SQRT: math.sqrt,
    Opcode.TANH: math.tanh,
    Opcode.SINE: math.sin,
    Opcode.COSINE: math.cos,
    Opcode.TAN: math.tan,
    Opcode.CBRT: lambda v: math.copysign(abs(v) ** (1 / 3), v),
    Opcode.LOGISTIC: lambda v: 1 / (1 + math.exp(-v)),
    Opcode.RSQRT: lambda v: 1 / math.sqrt(v),
}


@pytest.mark.parametrize("op", list(MATH), ids=lambda o: o.value)
@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.float64], ids=str)
def test_transcendental_matches_libm(op, dt):
    x = np.array([0.25, 0.5, 0.75, 1.0, 1.25, 2.0, 3.0], dt)
    got = run(op, x)
    expected = reference(MATH[op], x, dt)
    tol = 2e-15 if dt == np.float64 else 0  # narrow results are exactly the rounded value
    if op is Opcode.CBRT and dt == np.float64:
        tol = 4e-16 * 4
    np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64), rtol=tol)
    assert got.dtype == np.dtype(dt)


def test_transcendental_special_values():
    f = np.float32
    same(
        run(Opcode.EXP, np.array([-INF, INF, NAN, 0.0, 100.0], f)),
        np.array([0, INF, NAN, 1, INF], f),
    )
    same(
        run(Opcode.LOG, np.array([-1.0, 0.0, -0.0, INF, 1.0], f)),
        np.array([NAN, -INF, -INF, INF, 0.0], f),
    )
    same(run(Opcode.SQRT, np.array([-0.0, -1.0, INF], f)), np.array([-0.0, NAN, INF], f))
    same(
        run(Opcode.RSQRT, np.array([0.0, -0.0, 4.0, INF, -1.0], f)),
        np.array([INF, -INF, 0.5, 0.0, NAN], f),
    )
    same(run(Opcode.CBRT, np.array([-8.0, 27.0, -0.0, -INF], f)), np.array([-2, 3, -0.0, -INF], f))
    same(run(Opcode.TANH, np.array([INF, -INF, -0.0], f)), np.array([1, -1, -0.0], f))
    same(run(Opcode.SINE, np.array([-0.0, INF], f)), np.array([-0.0, NAN], f))
    same(run(Opcode.TAN, np.array([0.0, -0.0, INF], f)), np.array([0.0, -0.0, NAN], f))
    same(run(Opcode.EXPM1, np.array([-INF, -0.0], f)), np.array([-1, -0.0], f))
    same(run(Opcode.LOG1P, np.array([-1.0, -2.0, -0.0], f)), np.array([-INF, NAN, -0.0], f))


def test_expm1_log1p_are_accurate_near_zero():
    x = np.array([1e-10, -1e-12, 1e-300])
    np.testing.assert_allclose(run(Opcode.EXPM1, x), [math.expm1(v) for v in x], rtol=1e-15)
    np.testing.assert_allclose(run(Opcode.LOG1P, x), [math.log1p(v) for v in x], rtol=1e-15)


def test_logistic_is_stable():
    x = np.array([-1000.0, -100.0, -0.0, 0.0, 100.0, 1000.0, -INF, INF, NAN])
    got = run(Opcode.LOGISTIC, x)
    e = math.exp(-100)
    same(got[[0, 2, 3, 5, 6, 7, 8]], np.array([0.0, 0.5, 0.5, 1.0, 0.0, 1.0, NAN]))
    np.testing.assert_allclose(got[1], e / (1 + e), rtol=1e-15)
    assert got[4] == 1.0
    same(run(Opcode.LOGISTIC, np.array([-200.0, 200.0], np.float32)), np.array([0, 1], np.float32))


def test_complex_functions():
    z = np.array([1j * math.pi, -1 + 0j, -4 + 0j, -8 + 0j], np.complex128)
    np.testing.assert_allclose(run(Opcode.EXP, z[:1]), [-1 + 0j], atol=1e-15)
    np.testing.assert_allclose(run(Opcode.LOG, z[1:2]), [1j * math.pi])
    np.testing.assert_allclose(run(Opcode.SQRT, z[2:3]), [2j])
    np.testing.assert_allclose(run(Opcode.CBRT, z[3:]), [1 + 1j * math.sqrt(3)])
    same(run(Opcode.CBRT, np.array([0j], np.complex64)), np.array([0j], np.complex64))
    np.testing.assert_allclose(run(Opcode.RSQRT, np.array([-4 + 0j])), [-0.5j])
    got = run(Opcode.TANH, np.array([0.5 + 0.25j], np.complex64))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, [np.tanh(0.5 + 0.25j)], rtol=1e-6)
    w = np.array([0.5 + 0.25j])
    for op, fn in (
        (Opcode.SINE, np.sin),
        (Opcode.COSINE, np.cos),
        (Opcode.TAN, np.tan),
        (Opcode.EXPM1, np.expm1),
        (Opcode.LOG1P, np.log1p),
    ):
        np.testing.assert_allclose(run(op, w), fn(w), rtol=1e-15)
    np.testing.assert_allclose(run(Opcode.LOGISTIC, w), 1 / (1 + np.exp(-w)), rtol=1e-15)


# -- erf --------------------------------------------------------------------------------------
def test_erf_f64_matches_math_erf():
    x = np.concatenate(
        [
            np.linspace(-7, 7, 28001),
            np.geomspace(1e-300, 1.0, 400),
            -np.geomspace(1e-12, 8.0, 400),
            [0.9999999999, 1.0, 1.0000000001],
        ]
    )
    got = run(Opcode.ERF, x)
    expected = np.array([math.erf(v) for v in x])
    ulps = np.abs(got - expected) / np.spacing(np.abs(expected))
    assert ulps.max() <= 4, (ulps.max(), x[np.argmax(ulps)])
    nonzero = expected != 0
    assert np.max(np.abs(got - expected)[nonzero] / np.abs(expected[nonzero])) < 1e-15
    assert np.array_equal(got[~nonzero], expected[~nonzero])


def test_erf_special_values():
    x = np.array([INF, -INF, NAN, -0.0, 0.0, 8.0, -30.0, 1e-310])
    same(run(Opcode.ERF, x), np.array([1, -1, NAN, -0.0, 0.0, 1, -1, math.erf(1e-310)]))


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, E4M3, E5M2], ids=str)
def test_erf_narrow_types_round_the_f64_value(dt):
    x = np.array([-2.0, -0.5, 0.125, 0.75, 1.5, 3.0], dt)
    expected = reference(math.erf, x, dt)
    same(run(Opcode.ERF, x), expected)
