"""fft: shape rule and values against numpy.fft."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import dtypes, shape
from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.interpreter import evaluate
from hlort.ir import verify_module
from hlort.ir.attributes import FftType
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape

TOL = {np.complex64: 1e-5, np.float32: 1e-5, np.complex128: 1e-12, np.float64: 1e-12}


def run_fft(x: np.ndarray, kind: str, length) -> np.ndarray:
    b = Builder("fft")
    p = b.parameter(shape.array(dtypes.from_numpy(x.dtype), x.shape))
    module = b.build(b.fft(p, kind, length))
    verify_module(module)
    return evaluate(module, [x])


def infer(operand, kind, length):
    return infer_shape(
        Opcode.FFT, [operand], {"fft_type": FftType(kind), "fft_length": length}, None, "f"
    )


def rand(rng, dims, dtype):
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    return rng.standard_normal(dims).astype(dtype)


def close(got, want, dtype):
    scale = max(np.abs(want).max(), 1.0)
    assert np.abs(got - want).max() <= TOL[dtype] * scale * 10


# -- values -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_fft_and_ifft(dtype, rank):
    rng = np.random.default_rng(rank)
    dims = (2, 3, 5, 4, 6)[: 2 + rank]
    x = rand(rng, dims, dtype)
    length = dims[-rank:]
    axes = tuple(range(len(dims) - rank, len(dims)))
    got = run_fft(x, "FFT", length)
    assert got.dtype == np.dtype(dtype) and got.shape == x.shape
    close(got, np.fft.fftn(x.astype(np.complex128), axes=axes), dtype)
    back = run_fft(got, "IFFT", length)
    close(back, np.fft.ifftn(got.astype(np.complex128), axes=axes), dtype)
    close(back, x, dtype)  # normalized by 1/n


@pytest.mark.parametrize("dtype, out", [(np.float32, np.complex64), (np.float64, np.complex128)])
@pytest.mark.parametrize("dims, rank", [((8,), 1), ((3, 7), 1), ((2, 4, 6), 2), ((2, 3, 4, 5), 3)])
def test_rfft_and_irfft(dtype, out, dims, rank):
    rng = np.random.default_rng(7)
    x = rand(rng, dims, dtype)
    length = dims[-rank:]
    axes = tuple(range(len(dims) - rank, len(dims)))
    spectrum = run_fft(x, "RFFT", length)
    assert spectrum.dtype == np.dtype(out)
    assert spectrum.shape == dims[:-1] + (dims[-1] // 2 + 1,)
    close(spectrum, np.fft.rfftn(x.astype(np.float64), axes=axes), out)
    back = run_fft(spectrum, "IRFFT", length)
    assert back.dtype == np.dtype(dtype) and back.shape == dims
    close(back, x, dtype)


def test_irfft_of_a_given_spectrum_odd_length():
    rng = np.random.default_rng(8)
    spectrum = rand(rng, (3, 4), np.complex128)  # 4 bins: length 6 or 7
    got = run_fft(spectrum, "IRFFT", [7])
    assert got.shape == (3, 7) and got.dtype == np.float64
    close(got, np.fft.irfft(spectrum, n=7), np.float64)
    got = run_fft(spectrum, "IRFFT", [6])
    close(got, np.fft.irfft(spectrum, n=6), np.float64)


def test_known_values():
    impulse = np.array([1, 0, 0, 0], np.complex64)
    np.testing.assert_allclose(run_fft(impulse, "FFT", [4]), np.ones(4), atol=1e-7)
    ramp = np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(run_fft(ramp, "RFFT", [4]), [6, -2 + 2j, -2], atol=1e-6)


def test_nan_propagates():
    x = np.array([1, np.nan, 0, 0], np.complex64)
    assert np.isnan(run_fft(x, "FFT", [4])).all()


def test_zero_sized_dimensions():
    assert run_fft(np.zeros((0, 4), np.complex64), "FFT", [4]).shape == (0, 4)
    assert run_fft(np.zeros((3, 0), np.complex64), "FFT", [0]).shape == (3, 0)
    rfft = run_fft(np.zeros((2, 0), np.float32), "RFFT", [0])
    assert rfft.shape == (2, 0) and rfft.dtype == np.complex64
    irfft = run_fft(np.zeros((2, 0), np.complex64), "IRFFT", [0])
    assert irfft.shape == (2, 0) and irfft.dtype == np.float32


# -- shape rule -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "operand, kind, length, expected",
    [
        (shape.array("c64", [2, 8]), "FFT", [8], shape.array("c64", [2, 8])),
        (shape.array("c128", [4, 5, 6]), "IFFT", [4, 5, 6], shape.array("c128", [4, 5, 6])),
        (shape.array("f32", [3, 8]), "RFFT", [3, 8], shape.array("c64", [3, 5])),
        (shape.array("f64", [7]), "RFFT", [7], shape.array("c128", [4])),
        (shape.array("c64", [3, 5]), "IRFFT", [3, 8], shape.array("f32", [3, 8])),
        (shape.array("c64", [3, 5]), "IRFFT", [3, 9], shape.array("f32", [3, 9])),
        (shape.array("c128", [2, 1]), "IRFFT", [1], shape.array("f64", [2, 1])),
    ],
)
def test_shape_accepted(operand, kind, length, expected):
    assert infer(operand, kind, length) == expected


@pytest.mark.parametrize(
    "operand, kind, length, words",
    [
        (shape.array("c64", [8]), "FFT", [], ["1 to 3 entries"]),
        (shape.array("c64", [2, 2, 2, 2]), "FFT", [2, 2, 2, 2], ["1 to 3 entries"]),
        (shape.array("c64", [8]), "FFT", [2, 8], ["rank 1", "len(fft_length)=2"]),
        (shape.array("f32", [8]), "FFT", [8], ["FFT needs a complex operand"]),
        (shape.array("f32", [8]), "IFFT", [8], ["IFFT needs a complex"]),
        (shape.array("c64", [8]), "RFFT", [8], ["RFFT needs an f32 or f64"]),
        (shape.array("f16", [8]), "RFFT", [8], ["RFFT needs an f32 or f64"]),
        (shape.array("f32", [8]), "IRFFT", [8], ["IRFFT needs a complex"]),
        (shape.array("c64", [8]), "FFT", [4], ["trailing dimensions [8]", "[4]"]),
        (shape.array("f32", [4, 8]), "RFFT", [8, 8], ["trailing dimensions [4, 8]"]),
        (shape.array("c64", [8]), "IRFFT", [8], ["must be [5]"]),
        (shape.array("c64", [3, 5]), "IRFFT", [4, 8], ["must be [4, 5]"]),
        (shape.array("c64", [8]), "FFT", [-8], ["must not be negative"]),
    ],
)
def test_shape_rejected(operand, kind, length, words):
    with pytest.raises(InvalidArgument) as err:
        infer(operand, kind, length)
    message = str(err.value)
    assert message.startswith("INVALID_ARGUMENT: fft f:")
    for word in words:
        assert word in message, message


def test_bad_attributes():
    x = shape.array("c64", [4])
    with pytest.raises(InvalidArgument, match="fft_type"):
        infer_shape(Opcode.FFT, [x], {"fft_type": "FFT", "fft_length": (4,)})
    with pytest.raises(InvalidArgument, match="fft_length"):
        infer_shape(Opcode.FFT, [x], {"fft_type": FftType.FFT, "fft_length": 4})
    with pytest.raises(InvalidArgument, match="missing attribute 'fft_length'"):
        infer_shape(Opcode.FFT, [x], {"fft_type": FftType.FFT})
