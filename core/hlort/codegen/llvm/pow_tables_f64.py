"""The lookup tables of f64 pow (pow_f64.py), computed once with 40-digit decimal arithmetic.

log: x = 2**k z, z in [0.7, 1.41) split into LOG_N intervals by the top mantissa bits of
``bits(x) - LOG_OFFSET``; interval i stores 1/c_i rounded to as many bits as keep
r = z / c_i - 1 = fma(z, invc, -1) exact for every z in it, and log(c_i) = -log(invc) as a
double-double. The interval around 1 has invc = 1, so log(x) = log1p(x - 1) exactly reduced there.

exp: 2**(i / EXP_N) as the bits of its nearest double minus i << (52 - log2 EXP_N), so adding
k << 45 for k = m EXP_N + i gives 2**m 2**(i/EXP_N), and the relative error of that double.
"""

from __future__ import annotations

import functools
import math
import struct
from decimal import Context, Decimal
from fractions import Fraction

LOG_BITS = 7
LOG_N = 1 << LOG_BITS
EXP_BITS = 7
EXP_N = 1 << EXP_BITS
# 75.5 intervals below bits(1.0): 1.0 lies in the middle of interval 75, [1 - 2**-9, 1 + 2**-8).
LOG_OFFSET = 0x3FF0000000000000 - (151 << (51 - LOG_BITS))
ONE_INTERVAL = 75
_CTX = Context(prec=40)


def _bits(v: float) -> int:
    return struct.unpack("<q", struct.pack("<d", v))[0]


def _double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<q", bits))[0]


def _round_bits(v: Fraction, bits: int) -> Fraction:
    """v rounded to ``bits`` significant bits."""
    e = math.floor(math.log2(v)) - bits + 1
    return Fraction(round(v / Fraction(2) ** e)) * Fraction(2) ** e


def _ulp(v: float) -> Fraction:
    return Fraction(2) ** (math.frexp(v)[1] - 53)


def _log_dd(v: Fraction) -> tuple[float, float]:
    """log(v) as hi + lo, hi a multiple of 2**-40 so that k ln2_hi + hi is exact (ln2_hi is a
    multiple of 2**-32 and |k ln2_hi| < 2**10)."""
    exact = _CTX.ln(Decimal(v.numerator) / Decimal(v.denominator))
    hi = round(exact * 2**40) / 2**40
    return hi, float(exact - Decimal(hi))


@functools.cache
def log_table() -> tuple[tuple[float, float, float, float], ...]:
    """(invc, log(c) hi, log(c) lo, 0) per interval (padded to 4 doubles, one gather each)."""
    rows = []
    step = 1 << (52 - LOG_BITS)
    for i in range(LOG_N):
        lo = _double(LOG_OFFSET + i * step)
        hi = _double(LOG_OFFSET + (i + 1) * step - 1)
        if i == ONE_INTERVAL:
            rows.append((1.0, 0.0, 0.0, 0.0))
            continue
        mid = (Fraction(lo) + Fraction(hi)) / 2
        grain = min(_ulp(lo), _ulp(hi))
        for bits in range(12, 0, -1):
            invc = _round_bits(1 / mid, bits)
            worst = max(abs(Fraction(lo) * invc - 1), abs(Fraction(hi) * invc - 1))
            step_c = Fraction(2) ** (math.floor(math.log2(invc)) - bits + 1)
            if worst < Fraction(2) ** 53 * grain * step_c:
                break
        log_hi, log_lo = _log_dd(1 / invc)
        assert worst <= abs(Fraction(log_hi))  # pow_f64 adds log(c) + r by Fast2Sum
        rows.append((float(invc), log_hi, log_lo, 0.0))
    return tuple(rows)


@functools.cache
def log_reduced_bound() -> float:
    """max |z * invc - 1| over all intervals (the log1p polynomial's domain)."""
    step = 1 << (52 - LOG_BITS)
    worst = Fraction(0)
    for i, (invc, *_rest) in enumerate(log_table()):
        for bits in (LOG_OFFSET + i * step, LOG_OFFSET + (i + 1) * step - 1):
            worst = max(worst, abs(Fraction(_double(bits)) * Fraction(invc) - 1))
    return float(worst)


@functools.cache
def exp_table() -> tuple[tuple[int, int], ...]:
    """(bits of the relative tail, bits of 2**(i/EXP_N) minus i << 45) per i."""
    rows = []
    for i in range(EXP_N):
        exact = _CTX.power(Decimal(2), Decimal(i) / EXP_N)
        hi = float(exact)
        tail = float((exact - Decimal(hi)) / Decimal(hi))
        rows.append((_bits(tail), _bits(hi) - (i << (52 - EXP_BITS))))
    return tuple(rows)
