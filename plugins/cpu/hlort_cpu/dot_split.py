"""A big matmul in parts on hlort's pool, each part a single-threaded gemm (blas_threads.py says
why: the BLAS's own worker threads fought hlort's kernel threads for the cores).

The product is cut along the batch dimension when there are enough matrices, else along the
columns of b and the result when there are more columns than rows (each part then packs only
its share of b: cut by rows, every part packed all of b, and [128,784]x[784,512] on two threads
took ~80% of one thread's time instead of ~60%), else along the rows of a. Every part writes its
own slice of the result, and every slice is one BLAS can take as it is (unit stride in the last
dimension), so nothing is copied. Each part is gemm_part.py's native kernel, so the pool's
threads call gemm without Python; operands gemm cannot take as they are (integer dtypes, odd
strides) are split the same way into ``np.matmul`` calls on the Python pool. A product with
few rows (a matrix-vector-like dot) is left whole, to the BLAS's own threads.

Rounding: OpenBLAS's result depends on its thread count (with two threads it splits some
products differently than with one: measured, a [128,784]x[784,512] f32 product differs in
the last bits), so a dot's bits already depended on the machine's cores; with this split they
are those of single-threaded gemms of row blocks (mostly equal to one single-threaded gemm of
the whole; not always, as OpenBLAS picks kernels by size), within the usual dot tolerance.
"""

from __future__ import annotations

import numpy as np

from hlort_cpu import blas_threads
from hlort_cpu.gemm_part import BATCH, COLS, ROWS, fill, part_plan
from hlort_cpu.thread_pool import Ranges, run_chunks, split, worker_count

SPLIT_MIN_PRODUCTS = 1 << 20  # multiply-adds below which one thread does the whole product
MIN_ROWS = 16  # rows (or columns) per part, below which a gemm loses its register blocking
# Multiply-adds per part from which its ranges are long (thread_pool.LONG_CHUNK_MS, ~3 ms: one
# AVX-512 core of the 2-vCPU VM runs 80-90 G f32 multiply-adds/s in OpenBLAS's gemm, a 2048^3
# product's half in 48 ms; f64 and narrower cores take longer), so a crowded machine does not
# put every part on one thread.
LONG_PART_PRODUCTS = 1 << 28


def _aligned_parts(extent: int, n: int) -> Ranges:
    """``n`` parts of [0, extent) whose bounds are multiples of MIN_ROWS (gemm's blocking)."""
    step = -(-extent // n)
    step = -(-step // MIN_ROWS) * MIN_ROWS
    return Ranges((s, min(s + step, extent)) for s in range(0, extent, step))


_PLANS: dict = {}  # (workers, shapes, strides, dtypes) -> (mode, ranges, native plan) or None
_PLANS_MAX = 512
_NOT_PLANNED = object()


def _plan(a: np.ndarray, b: np.ndarray, out: np.ndarray, workers: int):
    """How to split this product (see the module docstring), or None to leave it whole."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = a.shape[0] if a.ndim == 3 else 1
    mode = split_mode(batch if a.ndim == 3 else 0, m, n, k, workers)
    if mode is None or not blas_threads.available():
        return None
    if mode == BATCH:
        ranges, unit = split(batch, workers), m * n * k
    else:
        ranges = _aligned_parts(n if mode == COLS else m, workers)
        unit = max(batch, 1) * k * (m if mode == COLS else n)
    ranges.long = min(e - s for s, e in ranges) * unit >= LONG_PART_PRODUCTS
    return mode, ranges, part_plan(a, b, out, mode)  # native: each part a gemm on a worker


def split_mode(batch: int, m: int, n: int, k: int, workers: int) -> int | None:
    """How a ``[batch (0: none), m, k] x [k, n]`` product is cut across ``workers`` threads
    (BATCH, COLS or ROWS; see the module docstring), or None: left whole."""
    if workers < 2 or max(batch, 1) * m * n * k < SPLIT_MIN_PRODUCTS:
        return None
    if batch >= workers:
        return BATCH
    if n > m and n >= workers * MIN_ROWS and m >= MIN_ROWS:
        return COLS
    return ROWS if m >= workers * MIN_ROWS else None


def _split_plan(a: np.ndarray, b: np.ndarray, out: np.ndarray):
    """:func:`_plan` for this thread count, kept per shapes, strides and dtypes."""
    workers = worker_count()
    key = (workers, a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype)
    key += (out.shape, out.strides, out.dtype)
    plan = _PLANS.get(key, _NOT_PLANNED)
    if plan is _NOT_PLANNED:
        plan = _plan(a, b, out, workers)
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def split_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """``np.matmul(a, b, out=out)`` in parts across the pool; False (nothing done) when the
    product is too small to split, or BLAS threads cannot be limited per thread here. The
    plan is kept per shapes, strides and dtypes (planning cost ~20 us, a mid-size dot ~100)."""
    return _run_plan(_split_plan(a, b, out), a, b, out)


class FixedSplit:
    """:func:`split_matmul` for one caller whose operands always have the same shapes,
    strides and dtypes (a DotThunk's, planned at compile time): the plan is looked up once per
    thread count instead of per call (building the lookup key cost ~2-4 us a dot)."""

    __slots__ = ("cached",)

    def __init__(self):
        self.cached = (0, None)  # (worker count, plan): one tuple, replaced whole

    def __call__(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
        return _run_plan(self.plan(a, b, out), a, b, out)

    def plan(self, a: np.ndarray, b: np.ndarray, out: np.ndarray):
        """:func:`_split_plan` for these operands, looked up once per thread count."""
        workers, plan = self.cached
        if workers != worker_count():
            workers = worker_count()
            plan = _split_plan(a, b, out)
            self.cached = (workers, plan)
        return plan

    def row_parts(self, a: np.ndarray, b: np.ndarray, out: np.ndarray):
        """(kernel, table, ranges) of the native gemm parts this split runs, when they cut
        ``out`` by rows or batch matrices (each range a range of its first dimension); None
        otherwise (dot_epilogue.py)."""
        plan = self.plan(a, b, out)
        if plan is None or plan[2] is None or plan[0] != (ROWS if out.ndim == 2 else BATCH):
            return None
        _mode, ranges, native = plan
        return native[0], fill(native, a, b, out), ranges


def _run_plan(plan, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    if plan is None:
        return False
    mode, ranges, native = plan
    with blas_threads.single_threaded():
        if native is not None:
            run_chunks(native[0], fill(native, a, b, out), ranges)
        else:  # a layout or dtype gemm cannot take: NumPy's matmul per part
            run_chunks(_numpy_part(mode, a, b, out), None, ranges)
    return True


_WHOLE: dict = {}  # (shapes, strides, dtypes) -> native plan of the whole product, or None


def gemm_parts(a: np.ndarray, b: np.ndarray, out: np.ndarray, whole: bool):
    """(kernel, table, ranges) computing ``out = a @ b`` as native single-threaded gemm chunks,
    for a step group (step_groups.py) to run beside other steps' chunks: the product whole
    (``whole``, or too small to split), else the parts :func:`split_matmul` would run. None
    when gemm cannot take these operands as they are (the caller runs ``np.matmul``)."""
    if not whole:
        plan = _split_plan(a, b, out)
        if plan is not None:
            _mode, ranges, native = plan
            return None if native is None else (native[0], fill(native, a, b, out), ranges)
    key = (a.shape, a.strides, a.dtype, b.shape, b.strides, b.dtype, out.shape, out.strides)
    plan = _WHOLE.get(key, _NOT_PLANNED)
    if plan is _NOT_PLANNED:
        mode, extent = (BATCH, out.shape[0]) if out.ndim == 3 else (ROWS, out.shape[-2])
        native = part_plan(a, b, out, mode) if blas_threads.available() else None
        plan = None if native is None else (native, Ranges([(0, extent)]))
        if len(_WHOLE) >= _PLANS_MAX:
            _WHOLE.clear()
        _WHOLE[key] = plan
    if plan is None:
        return None
    native, ranges = plan
    return native[0], fill(native, a, b, out), ranges


def _numpy_part(mode: int, a: np.ndarray, b: np.ndarray, out: np.ndarray):
    if mode == BATCH:
        part = lambda s, e: np.matmul(a[s:e], b[s:e], out=out[s:e])  # noqa: E731
    elif mode == COLS:
        part = lambda s, e: np.matmul(a, b[..., s:e], out=out[..., s:e])  # noqa: E731
    else:
        part = lambda s, e: np.matmul(a[..., s:e, :], b, out=out[..., s:e, :])  # noqa: E731

    def run(_table, s, e):  # errstate per thread: the pool's threads do not inherit it
        with np.errstate(over="ignore", invalid="ignore"):
            part(s, e)

    return run
