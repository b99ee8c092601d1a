"""fft on cpu runs on pocketfft (fft.py), never the interpreter fallback, and is bit for bit the
interpreter's result (both transform in c128 / f64 with numpy.fft and round once): FFT, IFFT,
RFFT and IRFFT over 1 to 3 trailing axes, every type the op takes (c64, c128; f32, f64 for RFFT),
odd and even lengths, batch, scalar-batch and empty shapes, NaN and inf inputs, and a batch large
enough to be split across threads."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from linalg_tolerance import assert_same_bits, run_native  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.ir.shape_rules.fft import rfft_bins  # noqa: E402

LABEL = "fft (pocketfft)"
NP = {"f32": np.float32, "f64": np.float64, "c64": np.complex64, "c128": np.complex128}


def _module(kind: str, dt: str, dims: tuple[int, ...], length: tuple[int, ...]):
    b = Builder("fft")
    x = b.parameter(shape.array(dt, dims))
    return b.build(b.fft(x, kind, length))


def _operand_dims(kind: str, batch: tuple[int, ...], length: tuple[int, ...]) -> tuple[int, ...]:
    if kind == "IRFFT":
        return (*batch, *length[:-1], rfft_bins(length[-1]))
    return (*batch, *length)


def _values(dt: str, dims: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    x = rng.standard_normal(dims) * np.exp(rng.uniform(-5, 5, dims))
    if dt.startswith("c"):
        x = x + 1j * rng.standard_normal(dims)
    return x.astype(NP[dt])


def _cases():
    for kind, types in (
        ("FFT", ["c64", "c128"]),
        ("IFFT", ["c64", "c128"]),
        ("RFFT", ["f32", "f64"]),
        ("IRFFT", ["c64", "c128"]),
    ):
        for dt in types:
            for batch, length in (
                ((), (8,)),
                ((3,), (7,)),
                ((2, 3), (4, 5)),
                ((2,), (3, 4, 6)),
                ((), (1,)),
                ((5,), (16, 9)),
            ):
                yield kind, dt, batch, length


@pytest.mark.parametrize(("kind", "dt", "batch", "length"), list(_cases()))
def test_fft_bitwise_equal_to_interpreter(kind, dt, batch, length):
    rng = np.random.default_rng(len(batch) * 10 + sum(length))
    dims = _operand_dims(kind, batch, length)
    x = _values(dt, dims, rng)
    got, ref = run_native(_module(kind, dt, dims, length), [x], LABEL)
    assert_same_bits(got, ref)


@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
@pytest.mark.parametrize("batch,length", [((0,), (4,)), ((3,), (0,)), ((0, 2), (2, 2))])
def test_empty_shapes(kind, batch, length):
    dt = "f32" if kind == "RFFT" else "c64"
    dims = _operand_dims(kind, batch, length)
    x = np.zeros(dims, NP[dt])
    got, ref = run_native(_module(kind, dt, dims, length), [x], LABEL)
    assert_same_bits(got, ref)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # the interpreter's numpy.fft
@pytest.mark.parametrize("kind", ["FFT", "IFFT", "RFFT", "IRFFT"])
def test_nan_and_inf_propagate_as_in_the_interpreter(kind):
    dt = "f64" if kind == "RFFT" else "c128"
    dims = _operand_dims(kind, (4,), (6,))
    x = _values(dt, dims, np.random.default_rng(2))
    x[0, 1] = np.nan
    x[1, 2] = np.inf
    x[2, 0] = -np.inf
    got, ref = run_native(_module(kind, dt, dims, (6,)), [x], LABEL)
    assert np.isnan(np.asarray(ref)[0]).all()
    assert_same_bits(got, ref)


@pytest.mark.parametrize("kind,dt", [("FFT", "c64"), ("RFFT", "f32"), ("IRFFT", "c128")])
def test_large_batch_split_across_threads(kind, dt):
    dims = _operand_dims(kind, (96,), (32, 24))
    x = _values(dt, dims, np.random.default_rng(4))
    got, ref = run_native(_module(kind, dt, dims, (32, 24)), [x], LABEL)
    assert_same_bits(got, ref)


def test_irfft_reads_the_interpreters_parts_of_dc_and_nyquist():
    """A spectrum with imaginary DC / Nyquist parts (no real signal has them): as numpy.fft."""
    x = _values("c128", (2, 5), np.random.default_rng(8))
    got, ref = run_native(_module("IRFFT", "c128", (2, 5), (8,)), [x], LABEL)
    assert_same_bits(got, ref)


def test_operand_computed_by_a_kernel():
    """The operand is a kernel temporary (it may live in the program's arena)."""
    x = _values("c64", (6, 10), np.random.default_rng(43))
    b = Builder("from_kernel")
    p = b.parameter(shape.array("c64", (6, 10)))
    module = b.build(b.negate(b.fft(b.add(p, p), "FFT", (10,))))
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"][LABEL] == 1, stats
    for _ in range(2):  # the second call reuses the arena
        assert_same_bits(exe(x), hlort.evaluate(module, [x]))
