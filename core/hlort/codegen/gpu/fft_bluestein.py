"""Bluestein's algorithm (chirp-z) for FFT axes whose length has a prime factor too long for one
Stockham pass (fft_schedule.MAX_RADIX: the direct DFT of a prime ``p`` is ``p^2`` work).

With ``c[j] = exp(-+ pi i j^2 / n)`` (the sign of the transform) and ``jk = (j^2 + k^2 -
(k - j)^2) / 2``, the length-``n`` DFT is a convolution:

    X[k] = c[k] * sum_j (x[j] c[j]) * conj(c[k - j]),

done as a cyclic one of length ``m >= 2n - 1`` (a 2-3-5-7-smooth length, so that its own
Stockham passes are few and short: 16411 takes 32928 = 14 * 14 * 14 * 12). The first forward
pass of length ``m`` reads ``x[j] c[j]`` for ``j < n`` and zero after; the last forward pass
multiplies each bin by ``B[k] / m``, ``B`` the length-``m`` spectrum of the wrapped ``conj(c)``,
computed here at compile time (numpy.fft in f64) and uploaded once as a constant; the inverse
passes of length ``m`` follow, the last keeping the ``n`` (or ``n // 2 + 1``) outputs times
``c[k]``. The chirp's exponent ``j^2 mod 2n`` is reduced in integer arithmetic before any angle
(``j^2 / n`` in floating point loses the angle for large ``j``), and ``c`` is read as a root of
unity of order ``2n`` from the twiddle tables, whose roots numpy computes in f64 (quarter turns
exact).

Accuracy: everything runs in f64 and rounds once, so the error is f64's ``eps * log2(m)`` times
the line's norm (tests/gpu/test_fft_bluestein_simulated.py states the bound it checks). Infinite
and NaN inputs: the convolution mixes every input into every output, so a line (the block of
transformed axes) with one non-finite input has only non-finite outputs, NaN in general; the
StableHLO spec leaves non-finite FFT inputs open, and pocketfft's pattern of inf and NaN is not
reproduced. Finite inputs give finite outputs where the result is in range.
"""

from __future__ import annotations

import math

import numpy as np

SMOOTH_PRIMES = (2, 3, 5, 7)
MAX_LENGTH = 1 << 31  # j^2 for j < n stays within u64 before it is reduced mod 2n


def _smooth_lengths(lo: int, hi: int) -> list[int]:
    """The SMOOTH_PRIMES-smooth numbers in [lo, hi]."""
    found = [1]
    for p in SMOOTH_PRIMES:
        found = [v * p**e for v in found for e in range(int(math.log(hi, p)) + 2) if v * p**e <= hi]
    return sorted(v for v in set(found) if v >= lo)


def convolution_length(n: int, radices) -> int:
    """The cyclic length for a length-``n`` Bluestein transform: the smooth ``m >= 2n - 1``
    (up to the next power of two) with the least memory traffic, ``m`` times its passes, then
    the least arithmetic, ``m`` times its terms per output (fft_schedule.radices' order)."""
    lo = 2 * n - 1
    hi = 1 << (lo - 1).bit_length()

    def cost(m: int) -> tuple[int, int, int]:
        steps = radices(m)
        return m * len(steps), m * sum(steps), m

    return min(_smooth_lengths(lo, hi), key=cost)


def chirp_exponents(n: int, j: np.ndarray) -> np.ndarray:
    """``j^2 mod 2n`` for each ``j < n`` in exact integer arithmetic (u64: ``n < 2^31``)."""
    j = np.asarray(j, dtype=np.uint64)
    return ((j * j) % np.uint64(2 * n)).astype(np.int64)


def chirp_spectrum(n: int, m: int, inverse: bool, roots) -> bytes:
    """``B / m`` as complex128 bytes: ``B`` the length-``m`` DFT of ``b[j] = conj(c[j])`` for
    ``|j| < n`` (wrapped to ``m - j``), so that the inverse passes need no 1/m of their own.
    ``roots(order, exponents)`` gives interleaved cos, sin of ``2 pi e / order``."""
    sign = 1.0 if inverse else -1.0  # c[j] = exp(sign * 2 pi i (j^2 mod 2n) / 2n)
    pairs = roots(2 * n, chirp_exponents(n, np.arange(n))).reshape(-1, 2)
    conj_c = pairs[:, 0] - 1j * sign * pairs[:, 1]
    b = np.zeros(m, np.complex128)
    b[:n] = conj_c
    b[m - n + 1 :] = conj_c[1:][::-1]
    return (np.fft.fft(b) / m).astype(np.complex128).tobytes()


__all__ = ["MAX_LENGTH", "chirp_exponents", "chirp_spectrum", "convolution_length"]
