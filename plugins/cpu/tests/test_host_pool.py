"""HostPool: aligned pooled outputs, reuse only after the last view dies, every dtype."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort_cpu.host_pool import POOL_MIN_BYTES, HostPool  # noqa: E402

BIG = (512, 256)  # 512 KiB of f32: pooled


@pytest.mark.parametrize(
    "dtype",
    [np.float32, np.float64, np.int8, np.bool_, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn],
)
def test_pooled_arrays_are_aligned_writable_and_typed(dtype):
    pool = HostPool()
    dt = np.dtype(dtype)
    dims = (POOL_MIN_BYTES // dt.itemsize, 2)
    a = pool.empty(dims, dt)
    assert a.dtype == dt and a.shape == dims and a.flags.c_contiguous and a.flags.writeable
    assert a.ctypes.data % 64 == 0


def test_memory_returns_only_when_the_last_view_dies():
    pool = HostPool()
    f32 = np.dtype(np.float32)
    a = pool.empty(BIG, f32)
    a[...] = 7
    view = a[3:].T  # a derived view keeps the block alive
    address = a.ctypes.data
    del a
    gc.collect()
    assert pool.idle_bytes == 0
    b = pool.empty(BIG, f32)  # must not reuse the block the view still reads
    b[...] = 0
    assert b.ctypes.data != address and np.all(view == 7)
    del view
    assert pool.idle_bytes > 0
    c = pool.empty(BIG, f32)
    assert c.ctypes.data == address and pool.hits == 1


def test_small_arrays_bypass_the_pool():
    pool = HostPool()
    pool.empty((4,), np.dtype(np.float32))
    assert pool.hits == pool.misses == 0


def test_idle_memory_is_capped():
    pool = HostPool(limit_bytes=POOL_MIN_BYTES)
    f32 = np.dtype(np.float32)
    arrays = [pool.empty(BIG, f32) for _ in range(3)]
    del arrays
    assert pool.idle_bytes <= POOL_MIN_BYTES


def test_repeated_calls_reuse_outputs_and_results_stay_intact():
    b = Builder("twice")
    x = b.parameter(shape.array("bf16", list(BIG)))
    exe = hlort.compile(b.build(b.add(x, x)), "cpu")
    data = np.arange(np.prod(BIG)).reshape(BIG).astype(ml_dtypes.bfloat16)
    first = exe(data)
    second = exe(data)  # first is alive: second gets other memory
    assert first.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(first.astype(np.float32), (data + data).astype(np.float32))
    np.testing.assert_array_equal(first.astype(np.float32), second.astype(np.float32))


def test_a_failing_chunk_waits_for_the_others():
    """run_chunks raises only once every chunk finished: their memory may be reused at once."""
    import time

    from hlort_cpu.thread_pool import run_chunks

    done = []

    def chunk(_, begin, end):
        if begin == 0:
            raise ValueError("first chunk failed")
        time.sleep(0.05)
        done.append(begin)

    with pytest.raises(ValueError):
        run_chunks(chunk, None, [(0, 1), (1, 2)])
    assert done == [1]
