"""One BLAS thread while hlort calls BLAS: the cpu plugin splits big dots across its own pool.

NumPy's OpenBLAS starts its own worker threads for every large gemm, and they spin for a while
after each call. Between two dots hlort runs fused kernels on its own pool (thread_pool.py), so
a program alternating dots and kernels had OpenBLAS's spinning workers and hlort's competing
for the same cores: measured on a loaded 2-core machine, a causal attention ran 9x, an MLP
training step 20x slower than with one BLAS thread (JAX/XLA, with one pool for everything, did
not slow down). So every BLAS call hlort makes (dot thunks, native while loops' gemms) uses one
BLAS thread, and a big dot is run by hlort's own threads, each calling a single-threaded gemm on
its part of the product (dot_split.py), as XLA's CPU backend runs Eigen's contractions on its
one intra-op pool.

The count is set with ``openblas_set_num_threads_local`` (OpenBLAS >= 0.3.27, what NumPy's
wheels ship). Despite its name, in NumPy's pthreads build it is one process-wide value (a test
checks), so :func:`single_threaded` is reference-counted: the first of overlapping blocks sets
one thread, the last one out restores the count it found. While an hlort dot runs, other NumPy
code in the process gets one BLAS thread too (a speed effect only, for that time). Where the
function is missing (another BLAS, an older OpenBLAS) :func:`available` is False and dots run as
one ``np.matmul`` with the BLAS's own threading, as before.
"""

from __future__ import annotations

import ctypes
import functools
import threading

from hlort_cpu.blas_functions import numpy_extension


@functools.cache
def _set_local():
    path = numpy_extension()
    if path is None:
        return None
    try:
        fn = ctypes.CDLL(path).openblas_set_num_threads_local
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_int]
    return fn


def available() -> bool:
    """Whether BLAS calls can be made single-threaded for one thread."""
    return _set_local() is not None


_LOCK = threading.Lock()
_DEPTH = 0  # blocks inside single_threaded() now, over all threads
_SAVED = 0  # the count the first of them found


class _SingleThreaded:
    """The block of :func:`single_threaded`: a plain class, not a generator-based context
    manager, since every dot enters one (measured ~4 us against ~1 per block)."""

    __slots__ = ("fn",)

    def __enter__(self) -> None:
        global _DEPTH, _SAVED
        fn = self.fn = _set_local()
        if fn is None:
            return
        with _LOCK:
            if _DEPTH == 0:
                _SAVED = fn(1)
            _DEPTH += 1

    def __exit__(self, *exc) -> None:
        global _DEPTH
        if self.fn is None:
            return
        with _LOCK:
            _DEPTH -= 1
            if _DEPTH == 0:
                self.fn(_SAVED)


def single_threaded() -> _SingleThreaded:
    """BLAS calls use one thread inside the block (a no-op without support); see above."""
    return _SingleThreaded()
