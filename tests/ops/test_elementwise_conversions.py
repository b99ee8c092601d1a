"""convert, bitcast-convert and reduce-precision: XLA's rounding, saturation and bit layouts."""

import ml_dtypes
import numpy as np
import pytest
from elementwise_helpers import BF16, E4M3, E5M2, INF, NAN, param, same

from hlort import Builder, dtypes, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode, infer_shape

# No op may leak a NumPy RuntimeWarning: IEEE special values are results, not errors.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def convert(x, to):
    b = Builder("t")
    return evaluate(b.build(b.convert(param(b, x), dtypes.from_numpy(to))), [x])


def bitcast(x, to):
    b = Builder("t")
    return evaluate(b.build(b.bitcast_convert(param(b, x), dtypes.from_numpy(to))), [x])


def reduce_precision(x, e, m):
    b = Builder("t")
    return evaluate(b.build(b.reduce_precision(param(b, x), e, m)), [x])


def sample(dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return np.array([True, False, True])
    if dtypes.from_numpy(dt).is_integer:
        return np.array([0, 1, min(100, dtypes.iinfo(dtypes.from_numpy(dt)).max)], dt)
    values = np.array([0.0, -1.5, 100.0])
    return (values + (0.5j if dt.kind == "c" else 0)).astype(dt)


@pytest.mark.parametrize("src", dtypes.ALL_DTYPES, ids=str)
def test_every_conversion_pair_runs(src):
    for dst in dtypes.ALL_DTYPES:
        for x in (sample(src.numpy), sample(src.numpy)[0].reshape(()), sample(src.numpy)[:0]):
            got = convert(x, dst.numpy)
            assert isinstance(got, np.ndarray)
            assert got.dtype == dst.numpy and got.shape == x.shape


# -- float -> integer -------------------------------------------------------------------------
def test_float_to_int_truncates_saturates_and_zeroes_nan():
    x = np.array([2.9, -2.9, -0.5, NAN, INF, -INF, 1e10, -1e10, 127.9, -128.9])
    same(convert(x, np.int8), np.array([2, -2, 0, 0, 127, -128, 127, -128, 127, -128], np.int8))
    same(convert(x, np.uint8), np.array([2, 0, 0, 0, 255, 0, 255, 0, 127, 0], np.uint8))
    same(
        convert(x.astype(np.float32), np.int32),
        np.array([2, -2, 0, 0, 2**31 - 1, -(2**31), 2**31 - 1, -(2**31), 127, -128], np.int32),
    )


def test_float_to_64_bit_int_edges():
    below = np.nextafter(2.0**63, 0)
    x = np.array([2.0**63, -(2.0**63), below, -below, 2.0**64])
    same(
        convert(x, np.int64),
        np.array([2**63 - 1, -(2**63), int(below), -int(below), 2**63 - 1], np.int64),
    )
    y = np.array([2.0**64, np.nextafter(2.0**64, 0), 2.0**63, -1.0, NAN])
    same(convert(y, np.uint64), np.array([2**64 - 1, 2**64 - 2048, 2**63, 0, 0], np.uint64))
    f = np.array([2.0**31, np.nextafter(np.float32(2.0**31), np.float32(0))], np.float32)
    same(convert(f, np.int32), np.array([2**31 - 1, 2**31 - 128], np.int32))
    same(convert(np.array([-3.5, 300.0], BF16), np.int8), np.array([-3, 127], np.int8))


# -- to and from pred -------------------------------------------------------------------------
def test_to_pred_is_nonzero():
    same(
        convert(np.array([0.0, -0.0, NAN, 0.1, INF], np.float32), np.bool_),
        np.array([False, False, True, True, True]),
    )
    same(convert(np.array([0, -3, 256], np.int32), np.bool_), np.array([False, True, True]))
    same(convert(np.array([0j, 1j, complex(-0.0, 0)]), np.bool_), np.array([False, True, False]))
    same(convert(np.array([0.0, 1e-3], E4M3), np.bool_), np.array([False, True]))


def test_from_pred_is_zero_or_one():
    p = np.array([False, True])
    for dt in (np.int8, np.uint64, np.float32, BF16, E4M3, np.complex64):
        same(convert(p, dt), np.array([0, 1], dt))


# -- integer -> integer and integer -> float --------------------------------------------------
def test_int_to_int_wraps():
    same(
        convert(np.array([300, -1, 2**31 - 1], np.int32), np.int8), np.array([44, -1, -1], np.int8)
    )
    same(convert(np.array([-1], np.int8), np.uint32), np.array([2**32 - 1], np.uint32))
    same(convert(np.array([255], np.uint8), np.int8), np.array([-1], np.int8))
    same(convert(np.array([2**64 - 1], np.uint64), np.int64), np.array([-1], np.int64))


def nearest(value: int, dt) -> float:
    """``value`` rounded to the precision of float ``dt`` in exact integer arithmetic."""
    finfo = ml_dtypes.finfo(dt)
    p = int(finfo.nmant) + 1
    e = abs(value).bit_length() - p
    q, r = divmod(abs(value), 1 << e)
    half = 1 << (e - 1)
    if r > half or (r == half and q % 2):
        q += 1
    return float(np.copysign(float(q << e), value))


def test_int_to_float_rounds_once_to_nearest_even():
    s64 = np.array([2**53 + 1, 2**53 + 3, -(2**53) - 1, 2**62 + 2**54 + 1, 2**63 - 1], np.int64)
    same(
        convert(s64, np.float64),
        np.array([2.0**53, 2.0**53 + 4, -(2.0**53), 2.0**62 + 2**54, 2.0**63]),
    )
    for dt in (np.float32, BF16):
        expected = np.array([nearest(v, dt) for v in s64.tolist()]).astype(dt)
        same(convert(s64, dt), expected)
    # 2**62 + 2**54 + 1 lies just above a bf16 tie: rounding through f64 or f32 would lose the +1.
    assert float(convert(s64[3:4], BF16)[0]) == 2.0**62 + 2**55
    u64 = np.array([2**64 - 1, 2**63 + 2**39, 2**63 + 2**39 + 1], np.uint64)
    same(convert(u64, np.float64), np.array([2.0**64, 2.0**63 + 2**39, 2.0**63 + 2**39]))
    same(convert(u64, np.float32), np.array([2.0**64, 2.0**63, 2.0**63 + 2**40], np.float32))
    same(
        convert(np.array([16777217, 65520, 65519], np.int32), np.float32),
        np.array([16777216, 65520, 65519], np.float32),
    )
    same(
        convert(np.array([65520, 65519, -65536], np.int32), np.float16),
        np.array([INF, 65504, -INF], np.float16),
    )


# -- float -> float ---------------------------------------------------------------------------
def test_f64_to_narrow_rounds_once():
    x = np.array([1 + 2.0**-8 + 2.0**-40, 1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8 + 2.0**-40)])
    same(convert(x, BF16), np.array([1 + 2.0**-7, 1.0, 1 + 2.0**-6, -(1 + 2.0**-7)], BF16))
    y = np.array([1 + 2.0**-11 + 2.0**-40, 65520.0, 65519.99, 1e-7, -1e-9, 1e300])
    same(convert(y, np.float16), np.array([1 + 2.0**-10, INF, 65504, 1e-7, -0.0, INF], np.float16))


def test_float_narrowing_specials():
    x = np.array([NAN, INF, -INF, -0.0, 449.0, 464.0, 470.0, 1e-10], np.float32)
    # e4m3fn: 448 is the largest finite value and the next step up (480) is NaN; 464 is a tie.
    same(convert(x, E4M3), np.array([NAN, NAN, NAN, -0.0, 448, 448, NAN, 0.0], E4M3))
    same(convert(x, E5M2), np.array([NAN, INF, -INF, -0.0, 448, 448, 448, 0.0], E5M2))
    same(
        convert(np.array([3.4e38, 1e39], np.float64), np.float32),
        np.array([3.4e38, INF], np.float32),
    )
    same(convert(np.array([1.0 + 2.0**-8], np.float32), BF16), np.array([1.0], BF16))


def test_widening_is_exact():
    x = np.array([448.0, -0.0, NAN, 2.0**-9], E4M3)
    same(convert(x, np.float64), np.array([448.0, -0.0, NAN, 2.0**-9]))
    same(convert(x, BF16), np.array([448.0, -0.0, NAN, 2.0**-9], BF16))
    same(convert(np.array([2.0**-24], np.float16), np.float32), np.array([2.0**-24], np.float32))


# -- complex ----------------------------------------------------------------------------------
def test_complex_conversions():
    z = np.array([1.5 - 2j, complex(NAN, 1)], np.complex128)
    same(convert(z, np.float32), np.array([1.5, NAN], np.float32))  # the real part
    same(convert(z, np.int32), np.array([1, 0], np.int32))
    same(convert(np.array([1 + 2.0**-30 + 1j]), np.complex64), np.array([1 + 1j], np.complex64))
    same(convert(np.array([2.5, -0.0], BF16), np.complex64), np.array([2.5, -0.0], np.complex64))
    same(convert(np.array([-3], np.int32), np.complex128), np.array([-3 + 0j]))


def test_convert_shape_rule():
    x = shape.array("f32", [2, 3])
    assert infer_shape(Opcode.CONVERT, [x], {}, shape.array("s8", [2, 3])) == shape.array(
        "s8", [2, 3]
    )
    with pytest.raises(HlortError) as err:
        infer_shape(Opcode.CONVERT, [x], {}, shape.array("s8", [3, 2]))
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "f32[2,3]" in str(err.value)
    with pytest.raises(HlortError, match="result shape must be given"):
        infer_shape(Opcode.CONVERT, [x], {})


# -- bitcast-convert --------------------------------------------------------------------------
def test_bitcast_same_width():
    same(
        bitcast(np.array([1.0, -0.0], np.float32), np.uint32),
        np.array([0x3F800000, 0x80000000], np.uint32),
    )
    same(bitcast(np.array(-1, np.int32), np.uint32), np.array(2**32 - 1, np.uint32))
    same(bitcast(np.array([1.0], BF16), np.int16), np.array([0x3F80], np.int16))
    same(bitcast(np.array([0x7C00], np.uint16), np.float16), np.array([INF], np.float16))
    same(bitcast(np.zeros(0, np.float64), np.int64), np.zeros(0, np.int64))


def test_bitcast_narrower_adds_a_dimension():
    got = bitcast(np.array([1.0, 2.0], np.float32), np.uint8)
    same(got, np.array([[0, 0, 0x80, 0x3F], [0, 0, 0, 0x40]], np.uint8))  # little-endian
    same(bitcast(np.array(1.0), np.uint32), np.array([0, 0x3FF00000], np.uint32))
    assert bitcast(np.zeros((0, 3), np.int32), np.int16).shape == (0, 3, 2)
    # the bytes of f64 1.0 and 2.0 read as (re, im) f32 pairs: (0, 1.875) and (0, 2)
    same(
        bitcast(np.array([1 + 2j], np.complex128), np.complex64),
        np.array([[1.875j, 2j]], np.complex64),
    )


def test_bitcast_wider_consumes_the_last_dimension():
    got = bitcast(np.array([[0, 0, 0x80, 0x3F], [0, 0, 0, 0xC0]], np.uint8), np.float32)
    same(got, np.array([1.0, -2.0], np.float32))
    same(bitcast(np.array([0x3C00, 0], np.uint16), np.int32), np.array(0x3C00, np.int32))


def test_bitcast_round_trip_keeps_nan_payloads():
    bits = np.array([0x7FC00001, 0xFF800123, 0x00000001], np.uint32)
    as_float = bitcast(bits, np.float32)
    same(bitcast(bitcast(as_float, np.uint8), np.float32).view(np.uint32), bits)


@pytest.mark.parametrize(
    "src, dims, dst, fragment",
    [
        ("f32", [2], "c64", "complex and real"),
        ("pred", [2], "u8", "pred"),
        ("u8", [3], "u16", "last dimension of 2"),
        ("u8", [], "u16", "last dimension of 2"),
    ],
)
def test_bitcast_shape_rule_rejects(src, dims, dst, fragment):
    b = Builder("t")
    with pytest.raises(HlortError) as err:
        b.bitcast_convert(b.parameter(shape.array(src, dims)), dst)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert fragment in str(err.value) and "bitcast-convert" in str(err.value)


# -- reduce-precision -------------------------------------------------------------------------
def test_reduce_precision_to_bf16_matches_rounding():
    rng = np.random.default_rng(1)
    bits = rng.integers(0x00800000, 0x7F000000, size=4096, dtype=np.uint32)  # normal f32
    x = bits.view(np.float32) * np.where(rng.random(4096) < 0.5, -1, 1).astype(np.float32)
    ties = np.array([1 + 2.0**-8, 1 + 3 * 2.0**-8, -(1 + 2.0**-8)], np.float32)
    x = np.concatenate([x, ties])
    same(reduce_precision(x, 8, 7), x.astype(BF16).astype(np.float32))


def test_reduce_precision_to_f16_range():
    x = np.array(
        [1 + 2.0**-11, 65504.0, 65520.0, 1e6, -1e6, 2.0**-14, 2.0**-15, -1e-7, 0.1], np.float32
    )
    expected = np.array(
        [1.0, 65504, INF, INF, -INF, 2.0**-14, 0.0, -0.0, float(np.float16(0.1))], np.float32
    )
    same(reduce_precision(x, 5, 10), expected)  # f16 subnormals flush to zero, as in XLA


def test_reduce_precision_nan_and_identity():
    x = np.array([NAN, -NAN, INF, -INF, -0.0, 1.5], np.float32)
    x[0] = np.array([0x7FC00001], np.uint32).view(np.float32)[0]
    got = reduce_precision(x, 5, 2)
    assert np.array_equal(got.view(np.uint32)[:2], x.view(np.uint32)[:2])  # NaN kept as is
    same(got[2:], np.array([INF, -INF, -0.0, 1.5], np.float32))
    same(reduce_precision(x, 5, 0)[:2], np.array([INF, INF], np.float32))  # no mantissa: inf
    same(reduce_precision(x, 8, 23), x)
    y = np.array([0.1, 1e-310, -3e300])
    same(reduce_precision(y, 11, 52), y)
    same(reduce_precision(y, 8, 23), np.array([float(np.float32(0.1)), 0.0, -INF]))


@pytest.mark.parametrize("dt", [np.float16, BF16, np.float32, np.float64, E4M3, E5M2], ids=str)
def test_reduce_precision_scalar_and_empty(dt):
    same(reduce_precision(np.array(1.0, dt), 5, 2), np.array(1.0, dt))
    same(reduce_precision(np.zeros((0, 3), dt), 4, 3), np.zeros((0, 3), dt))


def test_reduce_precision_narrow_inputs():
    h = np.array([1 + 2.0**-9, 6.0e-8, 3.0], np.float16)
    same(reduce_precision(h, 5, 10), h)  # identity keeps f16 subnormals
    same(reduce_precision(h, 5, 2), np.array([1.0, 0.0, 3.0], np.float16))
    b = np.array([1.0078125, 3.0e38], BF16)
    same(reduce_precision(b, 5, 2), np.array([1.0, INF], BF16))
    f8 = np.array([208.0, -0.0, 3.5, 448.0], E4M3)
    # reduce-precision's formats are IEEE-style: 4 exponent bits top out below 2**8, so 448
    # overflows to inf, which e4m3fn spells NaN.
    same(reduce_precision(f8, 4, 1), np.array([192.0, -0.0, 4.0, NAN], E4M3))


@pytest.mark.parametrize(
    "attrs, fragment",
    [
        ({"exponent_bits": 0, "mantissa_bits": 2}, "exponent_bits"),
        ({"exponent_bits": 5, "mantissa_bits": -1}, "mantissa_bits"),
        ({"exponent_bits": 5}, "mantissa_bits"),
    ],
)
def test_reduce_precision_shape_rule(attrs, fragment):
    with pytest.raises(HlortError) as err:
        infer_shape(Opcode.REDUCE_PRECISION, [shape.array("f32", [2])], attrs)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and fragment in str(err.value)
    with pytest.raises(HlortError, match="floating-point"):
        infer_shape(
            Opcode.REDUCE_PRECISION,
            [shape.array("s32", [2])],
            {"exponent_bits": 5, "mantissa_bits": 2},
        )
