"""Integer division, remainder, power, shifts, popcnt and clz: XLA's total definitions.

References are computed per element in Python integers (a loop in the test is fine), then
wrapped to the type's width.
"""

import numpy as np
import pytest
from elementwise_helpers import run

from hlort import dtypes
from hlort.ir import Opcode

INTS = [d.numpy for d in dtypes.INTEGER_DTYPES]
SIGNED = [d.numpy for d in dtypes.SIGNED_INTEGER_DTYPES]
UNSIGNED = [d.numpy for d in dtypes.UNSIGNED_INTEGER_DTYPES]


def _bits(dt: np.dtype) -> int:
    return dtypes.from_numpy(dt).bits  # 4 for int4/uint4 (one per byte)


def _signed(dt: np.dtype) -> bool:
    return dtypes.from_numpy(dt).is_signed_integer


def _info(dt: np.dtype):
    return dtypes.iinfo(dtypes.from_numpy(dt))


# No op may leak a NumPy RuntimeWarning: IEEE special values are results, not errors.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def wrap(value: int, dt: np.dtype) -> int:
    """``value`` reduced to the two's complement range of ``dt``."""
    bits = _bits(dt)
    value &= (1 << bits) - 1
    if _signed(dt) and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def edge_values(dt: np.dtype) -> np.ndarray:
    info = _info(dt)
    values = {0, 1, 2, 3, 7, info.max, info.max - 1, info.max // 2 + 1}
    if _signed(dt):
        values |= {-1, -2, -3, -7, info.min, info.min + 1}
    return np.array(sorted(values), dtype=dt)


def pairs(dt):
    v = edge_values(dt)
    return np.repeat(v, len(v)), np.tile(v, len(v))


def check(got, expected_ints, dt):
    assert got.dtype == dt
    assert got.tolist() == [wrap(e, dt) for e in expected_ints]


def c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_divide(dt):
    a, b = pairs(dt)
    minimum = _info(dt).min
    expected = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if y == 0:
            expected.append(-1)  # all bits set: -1 signed, UINT_MAX unsigned
        elif x == minimum and y == -1 and _signed(dt):
            expected.append(minimum)
        else:
            expected.append(c_div(x, y))
    check(run(Opcode.DIVIDE, a, b), expected, dt)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_remainder(dt):
    a, b = pairs(dt)
    expected = []
    for x, y in zip(a.tolist(), b.tolist(), strict=True):
        if y == 0:
            expected.append(x)
        else:
            expected.append(x - c_div(x, y) * y)  # INT_MIN % -1 = 0 falls out of this
    check(run(Opcode.REMAINDER, a, b), expected, dt)


def test_division_hand_values():
    a = np.array([-7, 7, -7, 7, 5, -(2**31), -(2**31)], np.int32)
    b = np.array([2, -2, -2, 2, 0, -1, 0], np.int32)
    assert run(Opcode.DIVIDE, a, b).tolist() == [-3, -3, 3, 3, -1, -(2**31), -1]
    assert run(Opcode.REMAINDER, a, b).tolist() == [-1, 1, -1, 1, 5, 0, -(2**31)]
    u = run(Opcode.DIVIDE, np.array([9, 9], np.uint32), np.array([0, 2], np.uint32))
    assert u.tolist() == [2**32 - 1, 4]


def xla_pow(base: int, exponent: int, dt: np.dtype) -> int:
    if exponent < 0:
        return 1 if base == 1 else 0  # XLA: also 0 for base -1
    return pow(base, exponent, 1 << (_bits(dt)))


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_power(dt):
    a, b = pairs(dt)
    expected = [xla_pow(x, y, dt) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    check(run(Opcode.POWER, a, b), expected, dt)


def test_power_hand_values():
    a = np.array([2, 3, -2, 0, 2, 1, -1, -1, 2, 7], np.int32)
    b = np.array([10, 5, 3, 0, -1, -5, 3, -1, 31, 0], np.int32)
    assert run(Opcode.POWER, a, b).tolist() == [1024, 243, -8, 1, 0, 1, -1, 0, -(2**31), 1]
    big = run(Opcode.POWER, np.array([3], np.uint64), np.array([2**63 + 5], np.uint64))
    assert big.tolist() == [pow(3, 2**63 + 5, 2**64)]


def shift_reference(op, x: int, amount: int, dt: np.dtype) -> int:
    bits = _bits(dt)
    amount &= (1 << bits) - 1  # read as unsigned
    pattern = x & ((1 << bits) - 1)
    signed = pattern - (1 << bits) if pattern >> (bits - 1) else pattern
    if op is Opcode.SHIFT_LEFT:
        return 0 if amount >= bits else pattern << amount
    if op is Opcode.SHIFT_RIGHT_LOGICAL:
        return 0 if amount >= bits else pattern >> amount
    return (-1 if signed < 0 else 0) if amount >= bits else signed >> amount


SHIFTS = [Opcode.SHIFT_LEFT, Opcode.SHIFT_RIGHT_LOGICAL, Opcode.SHIFT_RIGHT_ARITHMETIC]


@pytest.mark.parametrize("op", SHIFTS, ids=lambda o: o.value)
@pytest.mark.parametrize("dt", INTS, ids=str)
def test_shifts(op, dt):
    bits = _bits(dt)
    values = edge_values(dt)
    amounts = [0, 1, 3, bits - 1, bits, bits + 1, 2 * bits]
    if _signed(dt):
        amounts += [-1, -bits]
    x = np.repeat(values, len(amounts))
    s = np.tile(np.array(amounts).astype(dt), len(values))
    expected = [shift_reference(op, v, a, dt) for v, a in zip(x.tolist(), s.tolist(), strict=True)]
    check(run(op, x, s), expected, dt)


def test_shift_hand_values():
    x = np.array([-8, -8, -8, 1], np.int8)
    s = np.array([1, 8, -1, 7], np.int8)
    assert run(Opcode.SHIFT_RIGHT_ARITHMETIC, x, s).tolist() == [-4, -1, -1, 0]
    assert run(Opcode.SHIFT_RIGHT_LOGICAL, x, s).tolist() == [124, 0, 0, 0]
    assert run(Opcode.SHIFT_LEFT, x, s).tolist() == [-16, 0, 0, -128]
    u = run(Opcode.SHIFT_RIGHT_ARITHMETIC, np.array([0x80], np.uint8), np.array([1], np.uint8))
    assert u.tolist() == [0xC0]  # the bit pattern is shifted with sign fill


@pytest.mark.parametrize("dt", INTS, ids=str)
def test_popcnt_and_clz(dt):
    bits = _bits(dt)
    rng = np.random.default_rng(bits)
    raw = rng.integers(0, 2**bits, size=64, dtype=np.uint64) >> rng.integers(
        0, bits, size=64, dtype=np.uint64
    )
    x = np.concatenate([edge_values(dt), raw.astype(dt)])
    patterns = [v & ((1 << bits) - 1) for v in x.tolist()]
    check(run(Opcode.POPCNT, x), [bin(p).count("1") for p in patterns], dt)
    check(run(Opcode.CLZ, x), [bits - p.bit_length() for p in patterns], dt)


def test_clz_popcnt_hand_values():
    assert run(Opcode.CLZ, np.array([0, 1, -1, 2**30], np.int32)).tolist() == [32, 31, 0, 1]
    assert run(Opcode.POPCNT, np.array([0, -1, 0x0F], np.int8)).tolist() == [0, 8, 4]
    assert run(Opcode.CLZ, np.array(0, np.uint64)).tolist() == 64
    assert run(Opcode.POPCNT, np.zeros(0, np.uint16)).shape == (0,)
