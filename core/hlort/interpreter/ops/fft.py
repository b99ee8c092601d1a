"""Interpreter: fft, on numpy.fft over the trailing len(fft_length) axes.

The transform runs in complex128 / float64 and is rounded once to the result type (c64 / f32
for single precision), so the oracle is as accurate as the result type allows. IFFT and IRFFT are
normalized by 1/n, as in XLA and NumPy. IRFFT ignores the imaginary parts that a real signal's
spectrum cannot have (those of the zero and Nyquist bins), as NumPy and pocketfft do.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.registry import evaluates
from hlort.ir.attributes import FftType
from hlort.ir.opcodes import Opcode


@evaluates(Opcode.FFT)
def _fft(ev, instr, x: np.ndarray) -> np.ndarray:
    kind = instr.attrs["fft_type"]
    length = tuple(int(n) for n in instr.attrs["fft_length"])
    result = instr.shape
    if result.size == 0:
        return np.zeros(result.dims, result.dtype.numpy)
    axes = tuple(range(x.ndim - len(length), x.ndim))
    if kind is FftType.FFT:
        out = np.fft.fftn(x.astype(np.complex128), axes=axes)
    elif kind is FftType.IFFT:
        out = np.fft.ifftn(x.astype(np.complex128), axes=axes)
    elif kind is FftType.RFFT:
        out = np.fft.rfftn(x.astype(np.float64), axes=axes)
    else:
        out = np.fft.irfftn(x.astype(np.complex128), s=length, axes=axes)
    return out.astype(result.dtype.numpy, order="C")
