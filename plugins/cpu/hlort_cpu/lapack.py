"""LapackThunk: JAX's LAPACK custom calls run on LAPACK itself, as XLA:CPU runs them.

For ``lapack_<p><routine>_ffi`` (:mod:`hlort.interpreter.lapack_targets`) and TPU's ``Eigh``,
the thunk calls SciPy's LAPACK (and BLAS ``trsm``) wrappers in the call's own precision
(``sgetrf`` for f32...), matrix by matrix over the batch dimensions: the routines XLA's CPU
runtime calls, so results agree with JAX's bit for bit in most elements. Without SciPy it runs
hlort's reference (:func:`hlort.interpreter.lapack_targets.evaluate_lapack`: NumPy's LAPACK in
f64, rounded once), which agrees within rounding. Either way it is a library call, not an
interpreter fallback.

Where LAPACK itself leaves results unspecified the two may differ: the factor of a matrix that
is not positive definite (JAX replaces it by NaN from ``info``), ``gesdd``'s overwritten input,
and the U / V^H of a values-only SVD; eigenvectors and singular vectors are unique only up to
sign (phase), which both pick as LAPACK does for the precision they compute in, and a Schur
form only up to its unitary diagonal (hlort's reference deflates its own way). geev, gees,
gehrd, sytrd/hetrd and gtsv are :mod:`hlort_cpu.lapack_routines`'.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.lapack_targets import (
    CHECKED,
    LapackCall,
    eigh_tpu_options,
    evaluate_lapack,
)
from hlort.shape import TupleShape
from hlort_cpu.lapack_routines import native_checked

_PREFIX = {"float32": "s", "float64": "d", "complex64": "c", "complex128": "z"}


def _scipy():
    try:
        from scipy.linalg import blas, lapack
    except ImportError:
        return None
    return lapack, blas


def _per_matrix(fn, operands: list[np.ndarray], batch: tuple[int, ...]) -> list:
    """``fn(*matrices)`` for each batch index; its results stacked back into the batch."""
    flat = [o.reshape((-1, *o.shape[len(batch) :])) for o in operands]
    count = flat[0].shape[0]
    outs = [fn(*[f[i] for f in flat]) for i in range(count)]
    return [
        np.stack([o[k] for o in outs]).reshape((*batch, *np.shape(outs[0][k]))) if count else None
        for k in range(len(outs[0]) if count else 0)
    ]


class LapackThunk:
    """One LAPACK custom call (see the module docstring)."""

    def __init__(self, instr, call: LapackCall | None, ins: list[int], out: int):
        self.instr, self.call, self.shape = instr, call, instr.shape
        self.ins, self.out = ins, out
        libraries = _scipy()
        self.native = libraries is not None
        self.label = "custom-call (LAPACK)" if self.native else "custom-call (LAPACK via NumPy)"
        if libraries is not None:
            self.lapack, self.blas = libraries

    def __call__(self, env) -> None:
        operands = [np.asarray(env[i]) for i in self.ins]
        if self.call is None:  # TPU's Eigh
            env[self.out] = self._eigh_tpu(operands[0])
            return
        if not self.native or operands[0].size == 0:
            env[self.out] = evaluate_lapack(self.call, self.shape, *operands)
            return
        env[self.out] = self._native(operands)

    def _routine(self, name: str, dtype: np.dtype, library=None):
        return getattr(library or self.lapack, _PREFIX[dtype.name] + name)

    def _finish(self, values: list) -> object:
        leaves = self.shape.elements if isinstance(self.shape, TupleShape) else (self.shape,)
        out = [
            np.ascontiguousarray(v, leaf.dtype.numpy).reshape(leaf.dims)
            for v, leaf in zip(values, leaves, strict=True)
        ]
        return tuple(out) if isinstance(self.shape, TupleShape) else out[0]

    def _native(self, operands: list[np.ndarray]):
        call, a = self.call, operands[0]
        batch = a.shape[:-2]
        routine, dtype = call.routine, a.dtype
        if routine == "potrf":
            fn = self._routine("potrf", dtype)
            lower = call.char("uplo", "L") == "L"
            values = _per_matrix(lambda m: fn(m, lower=lower, clean=0), [a], batch)
        elif routine == "getrf":
            fn = self._routine("getrf", dtype)
            lu, piv, info = _per_matrix(lambda m: fn(m), [a], batch)
            values = [lu, piv + 1, info]
        elif routine == "geqrf":
            fn = self._routine("geqrf", dtype)
            values = _per_matrix(lambda m: fn(m)[:2], [a], batch)
        elif routine in ("orgqr", "ungqr"):
            fn = self._routine(routine, dtype)
            values = _per_matrix(lambda m, t: fn(m, t)[:1], operands, batch)
        elif routine in ("syevd", "heevd"):
            values = self._eigh(a, call.char("uplo", "L") == "L", call.char("mode", "V") == "V")
        elif routine in ("gesdd", "gesvd"):
            values = self._svd(a, routine, call.char("mode", "A"))
        elif routine in CHECKED:
            values = native_checked(self.lapack, call, operands)
        else:
            alpha = operands[2][()] if len(operands) > 2 else 1.0
            values = self._trsm(a, operands[1], alpha)
        return self._finish(values)

    def _eigh(self, a: np.ndarray, lower: bool, vectors: bool) -> list:
        fn = self._routine("heevd" if a.dtype.kind == "c" else "syevd", a.dtype)
        w, v, info = _per_matrix(lambda m: fn(m, compute_v=1, lower=int(lower)), [a], a.shape[:-2])
        return [v if vectors else a, w, info]

    def _eigh_tpu(self, a: np.ndarray):
        lower, _ = eigh_tpu_options(self.instr)
        if not self.native or a.size == 0:
            from hlort.interpreter import lapack_reference as ref

            wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
            v, w, _ = ref.eigh(wide, lower, True)
            return self._finish([v, w])
        v, w, _ = self._eigh(a, lower, True)
        return self._finish([v, w])

    def _svd(self, a: np.ndarray, routine: str, mode: str) -> list:
        fn = self._routine(routine, a.dtype)
        leaves = self.shape.elements
        uv = mode != "N"
        u, s, vt, info = _per_matrix(
            lambda m: fn(m, compute_uv=int(uv), full_matrices=int(mode == "A")), [a], a.shape[:-2]
        )
        if not uv:
            u, vt = np.zeros(leaves[2].dims, a.dtype), np.zeros(leaves[3].dims, a.dtype)
        return [a, s, u, vt, info]

    def _trsm(self, a: np.ndarray, b: np.ndarray, alpha) -> list:
        """BLAS ``?trsm`` with the call's ``alpha`` (1 when it passes none), as XLA's kernel."""
        call = self.call
        fn = self._routine("trsm", a.dtype, self.blas)
        side = int(call.char("side", "L") != "L")
        lower = int(call.char("uplo", "L") == "L")
        trans = {"N": 0, "T": 1, "C": 2}[call.char("trans_x", "N")]
        diag = int(call.char("diag", "N") == "U")
        (x,) = _per_matrix(
            lambda m, r: (fn(alpha, m, r, side=side, lower=lower, trans_a=trans, diag=diag),),
            [a, b],
            a.shape[:-2],
        )
        return [x]


def lapack_thunk(instr, call: LapackCall | None, ins: list[int], out: int) -> LapackThunk:
    return LapackThunk(instr, call, ins, out)
