"""FftThunk: fft (FFT, IFFT, RFFT, IRFFT) on pocketfft through ``numpy.fft``, as XLA's CPU
backend calls ducc (pocketfft's successor).

The transform is the interpreter's (``hlort.interpreter.ops.fft``) call for call: ``fftn`` /
``ifftn`` / ``rfftn`` / ``irfftn`` over the trailing ``len(fft_length)`` axes, computed in
complex128 / float64 whatever the element type and rounded once to the result type, so the
result is bit-identical to the interpreter's. What the thunk adds: the plan (function, axes,
compute and result types) is fixed at compile time; a double-precision result is written by
pocketfft straight into a pooled output (``out=``), a single-precision one is rounded into one;
and a large batch is split along its leading dimension across the thread pool (the transforms are
independent and NumPy releases the GIL inside them, so the chunks compute exactly the same
values).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from hlort.ir.attributes import FftType
from hlort.ir.instruction import Instruction
from hlort_cpu.host_pool import host_pool
from hlort_cpu.thread_pool import chunks, run_chunks

_TRANSFORMS = {
    FftType.FFT: (np.fft.fftn, np.complex128),
    FftType.IFFT: (np.fft.ifftn, np.complex128),
    FftType.RFFT: (np.fft.rfftn, np.float64),
    FftType.IRFFT: (np.fft.irfftn, np.complex128),
}

_DOUBLE = (np.dtype(np.complex128), np.dtype(np.float64))


class FftThunk:
    """One fft instruction; see the module docstring."""

    label = "fft (pocketfft)"

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        kind = instr.attrs["fft_type"]
        length = tuple(int(n) for n in instr.attrs["fft_length"])
        result = instr.shape
        rank = result.rank
        axes = tuple(range(rank - len(length), rank))
        transform, compute = _TRANSFORMS[kind]
        s = length if kind is FftType.IRFFT else None
        self.transform = partial(transform, s=s, axes=axes)
        self.compute = np.dtype(compute)
        self.dims, self.dtype = result.dims, np.dtype(result.dtype.numpy)
        self.in_place = self.dtype in _DOUBLE  # pocketfft writes the result itself
        self.empty = result.size == 0
        self.ins, self.out = ins, out
        batch_axes = rank - len(length)
        self.leading = result.dims[0] if batch_axes else 1
        per_leading = result.size // max(self.leading, 1)
        self.ranges = chunks(self.leading, per_leading * max(1, int(math.log2(per_leading + 1))))
        self.split = len(self.ranges) > 1  # only with batch dimensions (leading is 1 otherwise)

    def _run(self, x: np.ndarray, out: np.ndarray, begin: int, end: int) -> None:
        if self.split:
            x, out = x[begin:end], out[begin:end]
        with np.errstate(all="ignore"):  # NaN and inf propagate silently, as in a kernel
            if self.in_place:
                self.transform(x, out=out)
            else:
                out[...] = self.transform(x)  # the one rounding to c64 / f32, as astype

    def __call__(self, env) -> None:
        if self.empty:
            env[self.out] = np.zeros(self.dims, self.dtype)
            return
        x = env[self.ins[0]].astype(self.compute, copy=False)
        out = host_pool().empty(self.dims, self.dtype)
        if self.split:
            run_chunks(lambda _, begin, end: self._run(x, out, begin, end), None, self.ranges)
        else:
            self._run(x, out, 0, self.leading)
        env[self.out] = out


def fft_thunk(instr: Instruction, ins: list[int], out: int) -> FftThunk | None:
    """A thunk for an array fft (every form the shape rule accepts); None otherwise."""
    if not instr.shape.is_array or not instr.operands[0].shape.is_array:
        return None
    return FftThunk(instr, ins, out)
