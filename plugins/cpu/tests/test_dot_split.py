"""Big dots run in parts on hlort's pool with one BLAS thread per part (dot_split.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort_cpu import blas_threads, dot_split, thread_pool

pytestmark = pytest.mark.skipif(
    not blas_threads.available(), reason="NumPy's BLAS has no openblas_set_num_threads_local"
)


def _numpy_threads() -> int:
    """The calling thread's OpenBLAS thread count (set_num_threads_local returns it)."""
    fn = blas_threads._set_local()
    previous = fn(1)
    fn(previous)
    return previous


def test_the_count_is_process_wide_so_overlapping_blocks_restore_it_once():
    """openblas_set_num_threads_local is one value for the process in NumPy's build: two
    overlapping blocks (two threads' dots) must leave the count as found, not at one."""
    before = _numpy_threads()
    inside, entered, leave = [], threading.Event(), threading.Event()

    def second_block() -> None:
        with blas_threads.single_threaded():
            entered.set()
            leave.wait(10)

    with blas_threads.single_threaded():
        thread = threading.Thread(target=second_block)
        thread.start()
        entered.wait(10)
        inside.append(_numpy_threads())
    inside.append(_numpy_threads())  # the second block is still open
    leave.set()
    thread.join()
    assert inside == [1, 1]
    assert _numpy_threads() == before


@pytest.mark.parametrize(
    "a_shape, b_shape",
    [
        ((256, 784), (784, 512)),  # rows
        ((8, 512, 64), (8, 64, 512)),  # batch
        ((3, 300, 200), (3, 200, 100)),  # batch, uneven parts
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_split_matches_one_matmul(a_shape, b_shape, dtype, monkeypatch):
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(a_shape).astype(dtype)
    b = rng.standard_normal(b_shape).astype(dtype)
    out = np.full((*a_shape[:-1], b_shape[-1]), np.nan, dtype)
    threads = set()
    real = np.matmul

    def spy(*args, **kw):
        threads.add((threading.get_ident(), _numpy_threads()))
        return real(*args, **kw)

    monkeypatch.setattr(dot_split.np, "matmul", spy)
    assert dot_split.split_matmul(a, b, out)
    assert len(threads) == 2 and all(count == 1 for _, count in threads)
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(out, real(a, b), rtol=0, atol=8 * eps * a_shape[-1])


def test_small_or_few_row_products_are_left_whole(monkeypatch):
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    small = np.ones((16, 16), np.float32)
    assert not dot_split.split_matmul(small, small, np.empty_like(small))
    a, b = np.ones((4, 14000), np.float32), np.ones((14000, 301), np.float32)
    assert not dot_split.split_matmul(a, b, np.empty((4, 301), np.float32))


def test_compiled_dot_splits_and_matches_numpy(monkeypatch):
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    calls = []
    real = dot_split.split_matmul
    monkeypatch.setattr(
        "hlort_cpu.dot.split_matmul", lambda *a: calls.append(1) or real(*a), raising=True
    )
    b = Builder("big_dot")
    x = b.parameter(shape.array("f32", [256, 512]))
    w = b.parameter(shape.array("f32", [512, 384]))
    exe = hlort.compile(b.build(b.dot(x, w)), "cpu")
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((256, 512)).astype(np.float32)
    wa = rng.standard_normal((512, 384)).astype(np.float32)
    got = exe(xa, wa)
    assert calls, "the dot thunk did not go through split_matmul"
    np.testing.assert_allclose(np.asarray(got), xa @ wa, rtol=1e-5, atol=1e-4)
