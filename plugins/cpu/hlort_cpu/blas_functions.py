"""The address of the cblas gemm NumPy itself calls, for compiled code that calls it.

A native while loop with a dot in its body (native_while.py) calls gemm from LLVM through a
function pointer, so its dots run in the BLAS that ``np.matmul`` (the DotThunk's path) runs, with
the same arguments: the same products, summed the same way. NumPy's wheels ship OpenBLAS with
renamed ILP64 symbols (``scipy_cblas_sgemm64_``; older ones ``cblas_sgemm64_``); other builds
link a plain LP64 ``cblas_sgemm``. ``dlsym`` on NumPy's extension module searches the libraries
it links, so the name NumPy resolved is the one found here. When none is found (a NumPy without
CBLAS, or a platform where the lookup does not work) loops with dots stay on the Python path.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

# (name pattern, integer width): ILP64 names end in 64_
_NAMES = (
    ("scipy_cblas_{}gemm64_", 64),
    ("cblas_{}gemm64_", 64),
    ("scipy_cblas_{}gemm", 32),
    ("cblas_{}gemm", 32),
)


@dataclass(frozen=True)
class BlasFunction:
    name: str
    address: int
    int_bits: int


def numpy_extension() -> str | None:
    """The file of NumPy's extension module, through which its BLAS's symbols resolve."""
    try:
        from numpy._core import _multiarray_umath as module  # NumPy 2
    except ImportError:  # pragma: no cover - NumPy 1.x
        try:
            from numpy.core import _multiarray_umath as module
        except ImportError:
            return None
    return getattr(module, "__file__", None)


@functools.cache
def gemm(double: bool) -> BlasFunction | None:
    """``cblas_dgemm`` (``double``) or ``cblas_sgemm`` as NumPy links it, or None."""
    path = numpy_extension()
    if path is None:
        return None
    try:
        library = ctypes.CDLL(path)
    except OSError:  # pragma: no cover - depends on the platform's loader
        return None
    letter = "d" if double else "s"
    for pattern, bits in _NAMES:
        name = pattern.format(letter)
        try:
            symbol = getattr(library, name)
        except AttributeError:
            continue
        return BlasFunction(name, ctypes.cast(symbol, ctypes.c_void_p).value, bits)
    return None
