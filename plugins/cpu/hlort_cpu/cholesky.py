"""CholeskyThunk: cholesky on LAPACK's potrf through numpy.linalg, as XLA's CPU backend (and
JAX on CPU) call LAPACK.

Semantics are the interpreter's (``hlort.interpreter.ops.linalg``): ``lower`` factors a = L L^H
from a's lower triangle, otherwise a = U^H U from its upper one; only that triangle and the real
part of the diagonal are read; the other triangle of the result is zero; batch dimensions lead.
Every element type is factored in f64 / c128 (as the interpreter does) and rounded once to the
result type. A matrix that is not positive definite (a pivot <= 0 or NaN) becomes all NaN, as JAX
does with LAPACK's failure flag: LAPACK fails on a pivot <= 0, and a NaN pivot (which OpenBLAS's
potrf does not flag) leaves NaN on the diagonal, so "some diagonal element of the factor is not
> 0" finds exactly those matrices.

LAPACK's blocked factorization rounds differently from the interpreter's column-by-column loop:
results agree to a few ulps of f64 / c128 times the matrix's condition (bit for bit in most
elements once rounded to a single- or half-precision result); a pivot within rounding of zero may
succeed in one and fail in the other.

NumPy's public ``cholesky`` raises for the whole batch when one matrix fails; its gufuncs
(``numpy.linalg._umath_linalg.cholesky_lo`` / ``_up``, there since NumPy 1.8) return NaN for
that matrix instead, so the thunk calls those, and only when a NumPy lacks them falls back to
the public function, matrix by matrix where one fails.
"""

from __future__ import annotations

import numpy as np

from hlort.ir.instruction import Instruction
from hlort_cpu.host_pool import host_pool


def _gufunc(lower: bool):
    module = getattr(np.linalg, "_umath_linalg", None)
    return getattr(module, "cholesky_lo" if lower else "cholesky_up", None)


def _public(x: np.ndarray, lower: bool) -> np.ndarray:
    """``np.linalg.cholesky``; a failing matrix all NaN (one call per matrix only then)."""
    try:
        return np.linalg.cholesky(x, upper=not lower)
    except np.linalg.LinAlgError:
        n = x.shape[-1]
        flat = x.reshape(-1, n, n)
        out = np.empty_like(flat)
        for k, matrix in enumerate(flat):
            try:
                out[k] = np.linalg.cholesky(matrix, upper=not lower)
            except np.linalg.LinAlgError:
                out[k] = np.nan
        return out.reshape(x.shape)


class CholeskyThunk:
    """One cholesky instruction; see the module docstring."""

    label = "cholesky (LAPACK)"

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        result = instr.shape
        self.lower = bool(instr.attrs.get("lower", False))
        self.dims, self.dtype = result.dims, np.dtype(result.dtype.numpy)
        self.compute = np.dtype(np.complex128 if result.dtype.is_complex else np.float64)
        self.signature = "D->D" if result.dtype.is_complex else "d->d"
        self.gufunc = _gufunc(self.lower)
        self.empty = result.size == 0
        self.ins, self.out = ins, out

    def _factor(self, x: np.ndarray) -> np.ndarray:
        if self.gufunc is None:
            return _public(x, self.lower)
        return self.gufunc(x, signature=self.signature)

    def __call__(self, env) -> None:
        if self.empty:
            env[self.out] = np.zeros(self.dims, self.dtype)
            return
        x = env[self.ins[0]].astype(self.compute, copy=False)
        with np.errstate(all="ignore"):
            factor = self._factor(x)
            diagonal = np.diagonal(factor, axis1=-2, axis2=-1).real
            failed = ~np.all(diagonal > 0, axis=-1)
            if failed.any():
                factor[failed] = np.nan
            if self.dtype == self.compute:
                env[self.out] = factor
                return
            out = host_pool().empty(self.dims, self.dtype)
            np.copyto(out, factor, casting="unsafe")  # one rounding, as astype
        env[self.out] = out


def cholesky_thunk(instr: Instruction, ins: list[int], out: int) -> CholeskyThunk | None:
    """A thunk for an array cholesky (every float and complex type); None otherwise."""
    if not instr.shape.is_array:
        return None
    return CholeskyThunk(instr, ins, out)
