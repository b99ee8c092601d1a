"""The host scalars ``alpha`` and ``beta`` of a gemm library call, as cuBLAS and rocBLAS read them.

Both libraries take the scalars by pointer, in the call's scale type: a float for f32 compute,
a double for f64, and a (real, imaginary) pair of them for the complex gemms (cuComplex /
rocblas_float_complex, cuDoubleComplex / rocblas_double_complex). A GemmSpec's scalars are real
(``alpha + 0i``). Sharing this keeps the two plugins' complex gemms from reading garbage.
"""

from __future__ import annotations

import ctypes

from hlort.codegen.gpu.program import GemmSpec
from hlort.errors import InvalidArgument

COMPUTE_DTYPES = ("f32", "f64", "c64", "c128")


def gemm_scalars(spec: GemmSpec) -> tuple[ctypes._SimpleCData | ctypes.Array, ...]:
    """``(alpha, beta)`` as ctypes objects of ``spec.compute_dtype``'s scale type."""
    if spec.compute_dtype not in COMPUTE_DTYPES:
        raise InvalidArgument(
            f"gemm compute type {spec.compute_dtype!r} is none of {COMPUTE_DTYPES}; recompile "
            f"the program with this hlort"
        )
    part = ctypes.c_double if spec.compute_dtype in ("f64", "c128") else ctypes.c_float
    if spec.compute_dtype.startswith("c"):
        pair = part * 2
        return pair(spec.alpha, 0.0), pair(spec.beta, 0.0)
    return part(spec.alpha), part(spec.beta)


__all__ = ["COMPUTE_DTYPES", "gemm_scalars"]
