"""Bluestein's algorithm for FFT axes with a prime factor above MAX_RADIX (fft_bluestein.py), on
the host simulator against the interpreter (numpy.fft in complex128, rounded once).

Accuracy bound, per line (the block of transformed axes at one batch index):

    max |got - expected| <= BOUND * eps(f64) * log2(M) * |x|_2 * s  +  eps(result) * max |expected|

``M`` the product of the axes' Stockham lengths (a Bluestein axis counts its convolution's ``m``),
``|x|_2`` the line's input norm (a half spectrum's times sqrt(2), which bounds the Hermitian full
one's), ``s`` 1 for forward kinds and ``1 / N`` (N the transform's points) for inverse ones, the
last term the result's own rounding (the interpreter rounds numpy's c128 result too); plus, for
subnormal lines, the result type's smallest subnormal and ``N`` f64 ones (underflow in the
products, where no relative bound holds). Measured on
these inputs (f64, 1-3 axes, every kind): at most 1.5 times the f64 term; BOUND = 4.

Non-finite inputs: a line with an inf or NaN input has only inf or NaN output parts (the
convolution mixes every input into every output; mostly NaN, not pocketfft's pattern, which
the spec leaves open); the other lines are as for finite inputs, and finite inputs (huge, tiny,
subnormal, signed zeros) give finite outputs.
"""

import math

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.codegen.gpu import fft_schedule
from hlort.codegen.gpu.fft_bluestein import MAX_LENGTH, chirp_exponents, convolution_length
from hlort.codegen.gpu.fft_schedule import plan_fft, radices
from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value
from hlort.text.parser import parse_module

BOUND = 4.0
COMPLEX = {"f32": np.complex64, "f64": np.complex128}
REAL = {"f32": np.float32, "f64": np.float64}
HLO_COMPLEX = {"f32": "c64", "f64": "c128"}


def _module(kind, real, batch, length):
    full = batch + length
    half = batch + length[:-1] + (length[-1] // 2 + 1,)
    ctype = HLO_COMPLEX[real]
    in_type, out_type, in_dims, out_dims = {
        "FFT": (ctype, ctype, full, full),
        "IFFT": (ctype, ctype, full, full),
        "RFFT": (real, ctype, full, half),
        "IRFFT": (ctype, real, half, full),
    }[kind]
    fmt = lambda t, d: f"{t}[{','.join(map(str, d))}]"  # noqa: E731
    lengths = ",".join(map(str, length))
    text = f"""HloModule f
ENTRY main {{
  x = {fmt(in_type, in_dims)} parameter(0)
  ROOT y = {fmt(out_type, out_dims)} fft(x), fft_type={kind}, fft_length={{{lengths}}}
}}
"""
    return parse_module(text), in_dims, in_type.startswith("c")


def _input(rng, dims, is_complex, real, scale=1.0):
    x = rng.standard_normal(dims) * scale
    if is_complex:
        x = x + 1j * rng.standard_normal(dims) * scale
        return x.astype(COMPLEX[real])
    return x.astype(REAL[real])


def _run(module, x):
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"fft"}
    with np.errstate(invalid="ignore", over="ignore"):
        expected = np.asarray(flatten_value(evaluate(module, [x]))[0])
        (got,) = HostSimRunner(program).run([x])
    return got, expected


def _stockham_length(length) -> int:
    return math.prod(
        n if max(radices(n)) <= fft_schedule.MAX_RADIX else convolution_length(n, radices)
        for n in length
    )


_TINY = np.finfo(np.float64).smallest_subnormal


def _norm(x: np.ndarray) -> float:
    """The 2-norm without overflow or underflow in the squares."""
    top = np.abs(x).max(initial=0.0)
    if not top:
        return 0.0
    parts = [x.real, x.imag] if np.iscomplexobj(x) else [x]
    return float(top * np.linalg.norm([np.linalg.norm(p.astype(np.float64) / top) for p in parts]))


def _check_bound(kind, length, x, got, expected, batch_rank=1):
    """The module docstring's bound on every line; returns the worst share of its f64 term."""
    points = math.prod(length)
    scale = 1.0 / points if kind in ("IFFT", "IRFFT") else 1.0
    norm_factor = math.sqrt(2.0) if kind == "IRFFT" else 1.0
    eps = np.finfo(np.float64).eps * math.log2(max(2, _stockham_length(length)))
    rounding = np.finfo(got.dtype).eps
    underflow = np.finfo(got.dtype).smallest_subnormal + points * _TINY
    worst = 0.0
    for line in np.ndindex(*x.shape[:batch_rank]):
        f64_term = eps * _norm(x[line]) * norm_factor * scale
        error = np.abs(got[line].astype(np.complex128) - expected[line]).max(initial=0.0)
        allowed = BOUND * f64_term + rounding * np.abs(expected[line]).max(initial=0.0)
        allowed += underflow
        assert error <= allowed, (line, error, allowed)
        if got.dtype in (np.float64, np.complex128) and f64_term:
            worst = max(worst, error / f64_term)
    return worst


@pytest.fixture
def short_radix(monkeypatch):
    """Bluestein on short primes (over 16), so the simulator runs many cases quickly; the
    passes are the ones a prime over 16384 gets, only shorter."""
    monkeypatch.setattr(fft_schedule, "MAX_RADIX", 16)


def test_convolution_lengths_are_smooth_and_long_enough():
    """Never more passes, nor more points, than the next power of two."""
    for n in (17, 19, 97, 16411, 1000003):
        m = convolution_length(n, radices)
        power = 1 << (2 * n - 2).bit_length()
        assert 2 * n - 1 <= m <= power and max(radices(m)) <= 16
        assert m * len(radices(m)) <= power * len(radices(power))
    assert convolution_length(16411, radices) == 32928  # 14 * 14 * 14 * 12: four passes
    assert convolution_length(17, radices) == 35


def test_chirp_exponents_are_reduced_exactly_in_integers():
    """j^2 near 2^62 for the longest axis: f64 (53 bits) would lose the exponent."""
    n = MAX_LENGTH - 1
    j = [0, 1, 46341, n - 2, n - 1]
    assert chirp_exponents(n, np.array(j)).tolist() == [(v * v) % (2 * n) for v in j]


@pytest.mark.parametrize("real", ["f32", "f64"])
@pytest.mark.parametrize("length", [(17,), (19,), (2 * 23,), (3, 19), (17, 2, 4), (19, 17)])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_every_kind_on_bluestein_axes_within_the_bound(short_radix, kind, length, real):
    module, in_dims, is_complex = _module(kind, real, (3,), length)
    plan, why = plan_fft(module.entry.root)
    assert plan is not None, why
    assert any(p.table is not None for p in plan.passes)  # a Bluestein axis
    rng = np.random.default_rng(sum(length) + len(kind))
    x = _input(rng, in_dims, is_complex, real)
    got, expected = _run(module, x)
    worst = _check_bound(kind, length, x, got, expected)
    assert worst <= 0.5 * BOUND, worst  # the margin the docstring states


def test_a_prime_above_16384_runs_on_the_device():
    """The length the issue names: 16411 (prime) as a 32928-point convolution, no fallback
    (about a minute on the simulator: the other kinds run on short primes above)."""
    module, in_dims, is_complex = _module("FFT", "f64", (1,), (16411,))
    x = _input(np.random.default_rng(7), in_dims, is_complex, "f64")
    got, expected = _run(module, x)
    _check_bound("FFT", (16411,), x, got, expected)


@pytest.mark.parametrize("kind", ["IFFT", "IRFFT"])
def test_the_chirp_reads_two_short_tables_on_long_axes(short_radix, monkeypatch, kind):
    """Axes whose chirp order 2n is over ONE_TABLE (every real Bluestein axis) read it as
    ``w^(hi B) w^lo``: tried on short ones."""
    monkeypatch.setattr(fft_schedule, "ONE_TABLE", 16)
    module, in_dims, is_complex = _module(kind, "f64", (2,), (29,))
    program = simulated_program(module)
    assert "hlort_fft_twiddles_58_hi" in program.binary.decode()
    x = _input(np.random.default_rng(29), in_dims, is_complex, "f64")
    got, expected = _run(module, x)
    _check_bound(kind, (29,), x, got, expected)


def test_finite_inputs_of_every_magnitude_give_finite_outputs(short_radix):
    rng = np.random.default_rng(3)
    for real, big in (("f32", 1e36), ("f64", 1e300)):
        module, in_dims, _ = _module("FFT", real, (4,), (17,))
        x = _input(rng, in_dims, True, real)
        x[0] *= big / 17  # the sum stays in range
        x[1] *= np.finfo(REAL[real]).smallest_subnormal
        x[2] = np.where(rng.random(in_dims[1:]) < 0.5, -0.0, 0.0)
        got, expected = _run(module, x)
        assert np.isfinite(got.real).all() and np.isfinite(got.imag).all()
        _check_bound("FFT", (17,), x, got, expected)


@pytest.mark.parametrize(
    "value", [complex(np.inf, 0), complex(-np.inf, 0), complex(0, np.inf), complex(np.nan, 0)]
)
@pytest.mark.parametrize("length", [(17,), (3, 19)])
@pytest.mark.parametrize("kind", ["FFT", "RFFT", "IRFFT"])
def test_a_non_finite_input_makes_its_line_non_finite_only(short_radix, kind, length, value):
    module, in_dims, is_complex = _module(kind, "f64", (3,), length)
    rng = np.random.default_rng(11)
    x = _input(rng, in_dims, is_complex, "f64")
    rows = x[1].reshape(-1, x.shape[-1])  # bin 1 of the last axis: no IRFFT ignores its part
    plain = value.real if value.imag == 0 else value.imag  # a real input's inf or NaN
    rows[rng.integers(rows.shape[0]), 1] = value if is_complex else plain
    got, expected = _run(module, x)
    for part in (got.real, got.imag) if np.iscomplexobj(got) else (got,):
        assert not np.isfinite(part[1]).any()
    finite = [0, 2]
    _check_bound(kind, length, x[finite], got[finite], expected[finite])


def test_a_zero_batch_runs_no_work(short_radix):
    module, in_dims, _ = _module("IRFFT", "f32", (0,), (17,))
    got, _ = _run(module, np.zeros(in_dims, np.complex64))
    assert got.shape == (0, 17)


def test_an_axis_of_2_31_points_is_a_counted_fallback():
    n = MAX_LENGTH + 11
    module, _, _ = _module("FFT", "f32", (), (n,))
    plan, why = plan_fft(module.entry.root)
    assert plan is None and f"{MAX_LENGTH} points or more" in why
