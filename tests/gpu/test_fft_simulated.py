"""FFT as mixed-radix Stockham passes on the GPU (fft_schedule.py), on the host simulator against
the interpreter (numpy.fft in complex128): every conformance case, and FFT, IFFT, RFFT and IRFFT
over one to three trailing axes, odd, even, prime, mixed-radix and length-1 transforms, single
and double precision, both twiddle layouts (one table; two short tables for long axes); IRFFT
ignores the imaginary parts of the zero and Nyquist bins as pocketfft does (lengths with a
prime factor above MAX_RADIX: test_fft_bluestein_simulated.py); NaN reaches every
output of its line; infinite and NaN inputs give the interpreter's output parts wherever those
are numbers or infinities, and NaN only where the interpreter has NaN. Tolerance: the
conformance suite's "accumulate" one (a sum's rounding: 1e-10 relative or absolute in double,
1e-4 / 1e-5 in single), since the passes sum in another order than pocketfft."""

import math

import numpy as np
import pytest
from host_simulator import HostSimRunner, simulated_program

from hlort.codegen.gpu import fft_schedule
from hlort.codegen.gpu.fft_schedule import radices
from hlort.interpreter.evaluator import evaluate
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CASES = [c for c in all_cases() if c.op == "fft"]
COMPLEX = {"f32": "c64", "f64": "c128"}


def _check(module, args):
    expected = flatten_value(evaluate(module, args))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    assert {k.schedule for k in program.kernels} == {"fft"}
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), "accumulate", what=f"output {k}")
        assert problem is None, problem
    return got[0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance_case(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    _check(case.module, unflatten(shapes, args))


def _fft_text(kind, in_type, out_type, in_dims, out_dims, length):
    fmt = lambda t, d: f"{t}[{','.join(map(str, d))}]"  # noqa: E731
    lengths = ",".join(map(str, length))
    return f"""HloModule f
ENTRY main {{
  x = {fmt(in_type, in_dims)} parameter(0)
  ROOT y = {fmt(out_type, out_dims)} fft(x), fft_type={kind}, fft_length={{{lengths}}}
}}
"""


def _complex(rng, dims, dtype):
    return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)


@pytest.mark.parametrize("real", ["f32", "f64"])
@pytest.mark.parametrize("length", [(1,), (7,), (16,), (3, 6), (2, 3, 5)])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_every_kind_over_trailing_axes(real, length, kind):
    rng = np.random.default_rng(len(length) * 10 + length[-1])
    ctype = COMPLEX[real]
    batch = (2,)
    full = batch + length
    half = batch + length[:-1] + (length[-1] // 2 + 1,)
    if kind in ("FFT", "IFFT"):
        in_type, out_type, in_dims, out_dims = ctype, ctype, full, full
        x = _complex(rng, full, np.complex64 if real == "f32" else np.complex128)
    elif kind == "RFFT":
        in_type, out_type, in_dims, out_dims = real, ctype, full, half
        x = rng.standard_normal(full).astype(np.float32 if real == "f32" else np.float64)
    else:
        in_type, out_type, in_dims, out_dims = ctype, real, half, full
        x = _complex(rng, half, np.complex64 if real == "f32" else np.complex128)
    module = parse_module(_fft_text(kind, in_type, out_type, in_dims, out_dims, length))
    _check(module, [x])


@pytest.mark.parametrize("n", [6, 7])
def test_irfft_ignores_the_imaginary_parts_a_real_signal_cannot_have(n):
    rng = np.random.default_rng(n)
    x = _complex(rng, (3, n // 2 + 1), np.complex128)
    x[:, 0] += 5j  # DC
    if n % 2 == 0:
        x[:, -1] -= 3j  # Nyquist
    module = parse_module(_fft_text("IRFFT", "c128", "f64", (3, n // 2 + 1), (3, n), (n,)))
    got = _check(module, [x])
    clean = x.copy()
    clean[:, 0] = clean[:, 0].real
    if n % 2 == 0:
        clean[:, -1] = clean[:, -1].real
    np.testing.assert_allclose(got, np.fft.irfft(clean, n), rtol=1e-12, atol=1e-14)


def test_nan_reaches_every_output_of_its_line_only():
    """Which part of an output turns NaN may depend on the algorithm's operations (see
    test_non_finite_inputs_agree_wherever_the_interpreter_has_a_value), so only the lines are
    compared here."""
    x = np.ones((3, 8), np.complex64)
    x[1, 4] = np.nan
    module = parse_module(_fft_text("FFT", "c64", "c64", (3, 8), (3, 8), (8,)))
    expected = np.asarray(flatten_value(evaluate(module, [x]))[0])
    program = simulated_program(module)
    assert not program.fallbacks
    (got,) = HostSimRunner(program).run([x])
    assert np.isnan(got[1]).all() and np.isnan(expected[1]).all()
    np.testing.assert_allclose(got[[0, 2]], expected[[0, 2]], rtol=1e-6, atol=1e-6)


def test_a_zero_batch_runs_no_work():
    x = np.ones((0, 8), np.float32)
    module = parse_module(_fft_text("RFFT", "f32", "c64", (0, 8), (0, 5), (8,)))
    got = _check(module, [x])
    assert got.shape == (0, 5)


def test_lengths_factor_into_merged_radices():
    assert radices(1) == (1,)
    assert radices(97) == (97,)
    assert radices(1 << 20) == (16,) * 5
    assert radices(2 * 16411) == (16411, 2)
    assert radices(17 * 19 * 4) == (19, 17, 4)


@pytest.mark.parametrize(
    "n, greedy, merged",
    [
        (1 << 5, (16, 2), (8, 4)),  # same passes, 12 terms an output instead of 18
        (1 << 9, (16, 16, 2), (8, 8, 8)),  # 24 instead of 34
        (1 << 13, (16, 16, 16, 2), (16, 8, 8, 8)),
        (360, (8, 9, 5), (10, 6, 6)),  # 22 either way
        (1000, (8, 5, 5, 5), (10, 10, 10)),  # one pass less (2*5 merged)
        (33750, (6, 9, 5, 5, 5, 5), (15, 15, 15, 10)),  # two passes less (3*5 merged)
    ],
)
def test_radices_take_the_fewest_passes_then_the_fewest_terms(n, greedy, merged):
    """Each pass reads and writes the whole array (memory traffic), each output sums its
    radix's terms (arithmetic): the fewest passes first, then the least sum. The greedy merge
    in ascending prime order (the radices before) never merged 2 or 3 with 5, and left a radix
    of 2 or 4 after the 16s of a power of two. ptxas register counts of the passes stay alike
    (32-40 on sm_90 for radices 4-16, test_ptx_fft.py checks for spills)."""
    assert math.prod(merged) == n == math.prod(greedy)
    assert radices(n) == merged
    assert (len(merged), sum(merged)) < (len(greedy), sum(greedy)) or merged == (10, 6, 6)


def _kind_case(rng, kind, real, length, batch=(2,)):
    ctype = COMPLEX[real]
    cdtype = np.complex64 if real == "f32" else np.complex128
    full = batch + length
    half = batch + length[:-1] + (length[-1] // 2 + 1,)
    if kind in ("FFT", "IFFT"):
        return _fft_text(kind, ctype, ctype, full, full, length), _complex(rng, full, cdtype)
    if kind == "RFFT":
        x = rng.standard_normal(full).astype(np.float32 if real == "f32" else np.float64)
        return _fft_text(kind, real, ctype, full, half, length), x
    return _fft_text(kind, ctype, real, half, full, length), _complex(rng, half, cdtype)


@pytest.mark.parametrize("n", [12, 17 * 19, 360, 1000])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_mixed_radix_lengths_take_one_pass_per_radix(n, kind):
    rng = np.random.default_rng(n)
    text, x = _kind_case(rng, kind, "f64", (n,))
    module = parse_module(text)
    assert len(simulated_program(module).kernels) == len(radices(n))
    _check(module, [x])


@pytest.mark.parametrize("kind", ["FFT", "IRFFT"])
@pytest.mark.parametrize("n", [1000, 4096])
def test_long_axes_read_two_short_twiddle_tables(monkeypatch, kind, n):
    """The layout axes longer than ONE_TABLE get (``w^(hi B) * w^lo``), tried on short ones."""
    monkeypatch.setattr(fft_schedule, "ONE_TABLE", 64)
    text, x = _kind_case(np.random.default_rng(n), kind, "f64", (n,), batch=(1,))
    module = parse_module(text)
    program = simulated_program(module)
    assert f"hlort_fft_twiddles_{n}_hi" in program.binary.decode()
    _check(module, [x])


@pytest.mark.parametrize("n", [7, 8, 16])
def test_an_infinite_input_turns_into_inf_where_pocketfft_has_inf(n):
    """Exact rotations by 1, -1 and +-i (not complex products with a zero part, which would make
    inf * 0 = NaN), so a one-pass line's inf/NaN pattern is pocketfft's. Lines whose passes are
    several can differ where pocketfft's own butterflies subtract infinities."""
    x = np.ones((3, n), np.complex64)
    x[1, 2] = np.inf
    module = parse_module(_fft_text("FFT", "c64", "c64", (3, n), (3, n), (n,)))
    with np.errstate(invalid="ignore"):
        expected = np.asarray(flatten_value(evaluate(module, [x]))[0])
    (got,) = HostSimRunner(simulated_program(module)).run([x])
    for part in (np.real, np.imag):
        assert (np.isnan(part(got)) == np.isnan(part(expected))).all()
        assert (np.isinf(part(got)) == np.isinf(part(expected))).all()
    np.testing.assert_allclose(got[[0, 2]], expected[[0, 2]], rtol=1e-6, atol=1e-6)


_NON_FINITE = [
    complex(np.inf, 0.0),
    complex(-np.inf, 0.0),
    complex(0.0, np.inf),
    complex(np.inf, np.inf),
    complex(-np.inf, np.inf),
    complex(np.inf, 2.5),
    complex(-1.5, -np.inf),
    complex(np.nan, 0.0),
    complex(0.0, np.nan),
    complex(np.nan, np.inf),
]


def _parts(a: np.ndarray) -> list[np.ndarray]:
    return [a.real, a.imag] if np.iscomplexobj(a) else [a]


def _where_the_interpreter_has_a_value(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """``expected`` with its NaN parts replaced by ``got``'s: where pocketfft's butterflies
    made NaN (inf - inf in an intermediate step), these passes may have a number."""
    wanted = expected.copy()
    for g, w in zip(_parts(got), _parts(wanted), strict=True):  # views: no 1j * inf = nan + inf j
        np.copyto(w, g, where=np.isnan(w))
    return wanted


@pytest.mark.parametrize("real", ["f32", "f64"])
@pytest.mark.parametrize("length", [(4,), (6,), (8,), (7,), (12,), (4, 6), (2, 3, 4)])
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_non_finite_inputs_agree_wherever_the_interpreter_has_a_value(real, length, kind):
    """One to three infinite or NaN inputs in some lines (of every kind above, real ones for
    RFFT): every output part where the interpreter has a number or an infinity is the same
    (an infinity of the same sign, a number within the tolerance), and NaN only where the
    interpreter's is; the other lines are as for finite input. Before quarter turns rotated
    exactly, inf * 0 put NaN beside pocketfft's infinities (inf + nan i for inf + 0i)."""
    rng = np.random.default_rng(sum(length) * 7 + len(kind))
    ctype = COMPLEX[real]
    full = (4,) + length
    half = (4,) + length[:-1] + (length[-1] // 2 + 1,)
    complex_np = np.complex64 if real == "f32" else np.complex128
    if kind in ("FFT", "IFFT"):
        in_type, out_type, in_dims, out_dims = ctype, ctype, full, full
        x = _complex(rng, full, complex_np)
    elif kind == "RFFT":
        in_type, out_type, in_dims, out_dims = real, ctype, full, half
        x = rng.standard_normal(full).astype(np.float32 if real == "f32" else np.float64)
    else:
        in_type, out_type, in_dims, out_dims = ctype, real, half, full
        x = _complex(rng, half, complex_np)
    for line in (0, 2, 3):  # line 1 stays finite
        flat = x[line].reshape(-1)
        for at in rng.choice(flat.size, int(rng.integers(1, 4)), replace=False):
            value = _NON_FINITE[rng.integers(len(_NON_FINITE))]
            flat[at] = value if np.iscomplexobj(x) else value.real
    module = parse_module(_fft_text(kind, in_type, out_type, in_dims, out_dims, length))
    program = simulated_program(module)
    assert not program.fallbacks, program.fallback_summary()
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is what is tested
        expected = np.asarray(flatten_value(evaluate(module, [x]))[0])
        (got,) = HostSimRunner(program).run([x])
    wanted = _where_the_interpreter_has_a_value(got, expected)
    problem = describe_mismatch(got, wanted, "accumulate")
    assert problem is None, problem
    assert np.isfinite(_parts(got)[0][1]).all()  # the finite line
