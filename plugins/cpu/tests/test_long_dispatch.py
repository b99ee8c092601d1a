"""A dispatch whose chunks are long (``Ranges.long``: a big dot's gemm parts) uses the whole pool
however many other threads are runnable; a short one is still demoted to the calling thread
(thread_pool.threads_free), and a product computes the same bits either way."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from hlort_cpu import blas_threads, dot_split, spin_pool_ir, thread_pool
from hlort_cpu.gemm_part import BATCH, COLS, ROWS

sys.path.insert(0, str(Path(__file__).parent))
from test_spin_pool import Marks, marker  # noqa: E402, F401

pytestmark = pytest.mark.skipif(
    spin_pool_ir.supported() is not None, reason="the native pool needs Linux futexes"
)


class _Pool:
    workers = 1

    def sleepers(self) -> int:
        return 0


@pytest.fixture
def crowded_queue(tmp_path, monkeypatch):
    """The run queue as /proc/loadavg reads with 7 runnable threads on a 2-CPU machine."""
    monkeypatch.setattr(thread_pool, "_machine_cpus", lambda: 2)
    path = tmp_path / "loadavg"
    path.write_text("3.00 2.00 1.00 7/300 12345\n")
    queue = thread_pool._RunQueue()
    if queue.fd is not None:
        os.close(queue.fd)
    queue.enabled, queue.fd = True, os.open(path, os.O_RDONLY)
    monkeypatch.setattr(thread_pool, "_RUN_QUEUE", queue)
    yield queue
    os.close(queue.fd)


def _long(ranges: thread_pool.Ranges) -> thread_pool.Ranges:
    ranges.long = True
    return ranges


def test_a_long_dispatch_keeps_every_thread_and_a_short_one_does_not(crowded_queue):
    before = thread_pool.dispatch_counts()
    short = thread_pool.split(100, 2)
    assert thread_pool.threads_free(_Pool(), short) == 1 and thread_pool.crowded(_Pool(), short)
    long = _long(thread_pool.split(100, 2))
    assert thread_pool.threads_free(_Pool(), long) == 2
    assert not thread_pool.crowded(_Pool(), long)
    after = thread_pool.dispatch_counts()
    assert after["crowded"] - before["crowded"] == 2  # the short one, asked twice
    assert after["long"] - before["long"] == 2
    assert after["pooled"] == before["pooled"]


def _spied_pool(monkeypatch):
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    pool = thread_pool.native_pool(1)
    if pool is None:
        pytest.skip("no native pool here")
    seen = []
    run = pool.run
    monkeypatch.setattr(
        type(pool),
        "run",
        lambda self, fn, t, ts, ranges, n: (seen.append(n), run(fn, t, ts, ranges, n)),
    )
    return seen


def test_crowded_long_chunks_go_to_the_pool_short_ones_run_on_the_caller(
    marker,  # noqa: F811
    crowded_queue,
    monkeypatch,
):
    seen = _spied_pool(monkeypatch)
    marks = Marks(100)
    thread_pool.run_chunks(marker, marks.table, thread_pool.split(100, 2))
    assert seen == [] and set(marks.tids.tolist()) == {threading.get_native_id()}
    thread_pool.run_chunks(marker, marks.table, _long(thread_pool.split(100, 2)))
    assert seen == [2]
    np.testing.assert_array_equal(marks.counts, 2)  # every element once per dispatch


@pytest.mark.parametrize(
    "batch, m, n, k, mode, long",
    [
        (0, 2048, 2048, 2048, ROWS, True),  # 2^32 multiply-adds a part: ~48 ms
        (0, 1024, 1024, 1024, ROWS, True),  # 2^29: ~6 ms
        (0, 768, 768, 768, ROWS, False),  # 2^27.8: ~2.5 ms, as fast inline when crowded
        (0, 512, 512, 512, ROWS, False),
        (0, 256, 1024, 784, COLS, False),  # the MLP's first dot: ~1 ms a part
        (0, 512, 2048, 2048, COLS, True),
        (4, 256, 512, 1024, BATCH, True),  # two matrices a part: 2^28
        (4, 256, 256, 1024, BATCH, False),
    ],
)
def test_a_dots_parts_are_long_from_a_few_milliseconds(batch, m, n, k, mode, long):
    if not blas_threads.available():
        pytest.skip("no per-thread BLAS control: dots are not split")
    lead = (batch,) if batch else ()
    a, b = np.empty((*lead, m, k), np.float32), np.empty((*lead, k, n), np.float32)
    out = np.empty((*lead, m, n), np.float32)
    got_mode, ranges, _native = dot_split._plan(a, b, out, 2)
    assert got_mode == mode and ranges.long is long


def test_a_long_product_on_a_crowded_machine_keeps_its_bits(crowded_queue, monkeypatch):
    """The same parts on the pool (long) and on the caller (short): bit-identical."""
    if not blas_threads.available():
        pytest.skip("no per-thread BLAS control: dots are not split")
    seen = _spied_pool(monkeypatch)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((256, 300)).astype(np.float32)
    b = rng.standard_normal((300, 200)).astype(np.float32)
    a[3, 7], b[11, 2] = np.nan, np.inf
    results = []
    for threshold in (1, 1 << 62):  # parts long, then short
        monkeypatch.setattr(dot_split, "LONG_PART_PRODUCTS", threshold)
        monkeypatch.setattr(dot_split, "_PLANS", {})
        out = np.empty((256, 200), np.float32)
        assert dot_split.split_matmul(a, b, out)
        results.append(out)
    assert seen == [2]  # the long parts went to the pool, the short ones stayed inline
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_allclose(results[0], a @ b, rtol=1e-4, atol=1e-4)


def test_a_dot_epilogue_with_long_parts_uses_the_pool_and_keeps_its_bits(
    crowded_queue, monkeypatch
):
    """The seed's dot + softmax as one step (dot_epilogue.py): long parts on a crowded machine
    go to the pool, short ones stay on the caller, with the same bits."""
    if not blas_threads.available():
        pytest.skip("no per-thread BLAS control: dots are not split")
    from test_dot_epilogue import _bits, _epilogues, _inputs, _text

    import hlort

    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setenv("HLORT_CPU_THREADS", "2")
    seen = _spied_pool(monkeypatch)
    shape = (256, 128, 256)
    text, args = _text(*shape), _inputs(*shape)
    results = []
    for threshold in (1, 1 << 62):  # parts long, then short
        monkeypatch.setattr(dot_split, "LONG_PART_PRODUCTS", threshold)
        monkeypatch.setattr(dot_split, "_PLANS", {})
        exe = hlort.compile(text, "cpu")
        assert len(_epilogues(exe)) == 1
        results.append(np.asarray(exe.raw.program.run(args)[0]))
    assert seen == [2]
    np.testing.assert_array_equal(_bits(results[0]), _bits(results[1]))
    assert np.isnan(results[0][1]).all()  # the NaN row stays NaN
