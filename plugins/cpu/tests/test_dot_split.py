"""Big dots run in parts on hlort's pool with one BLAS thread per part (dot_split.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hlort
from hlort import Builder, shape
from hlort_cpu import blas_threads, dot_split, gemm_part, thread_pool

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


def _operand(rng, shape, dtype, transposed=False):
    x = rng.standard_normal(shape[:-2] + shape[-2:][::-1] if transposed else shape).astype(dtype)
    return np.swapaxes(x, -1, -2) if transposed else x


@pytest.mark.parametrize(
    "a_shape, b_shape, mode",
    [
        ((256, 784), (784, 512), gemm_part.COLS),  # few rows, many columns: split the columns
        ((512, 300), (300, 128), gemm_part.ROWS),
        ((8, 512, 64), (8, 64, 512), gemm_part.BATCH),
        ((3, 300, 200), (3, 200, 100), gemm_part.BATCH),  # uneven parts
        ((1, 300, 200), (1, 200, 100), gemm_part.ROWS),  # one matrix: its rows
    ],
)
@pytest.mark.parametrize("transposed", [(False, False), (True, False), (False, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_split_matches_one_matmul(a_shape, b_shape, mode, transposed, dtype, monkeypatch):
    """Each part is a gemm the pool's threads call natively (gemm_part.py), on operands as they
    are (transposed views included): the result is one matmul's within the dot tolerance."""
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    modes = []
    real_plan = dot_split.part_plan
    monkeypatch.setattr(dot_split, "part_plan", lambda *a: modes.append(a[3]) or real_plan(*a))
    monkeypatch.setattr(dot_split, "_PLANS", {})
    rng = np.random.default_rng(1)
    a = _operand(rng, a_shape, dtype, transposed[0])
    b = _operand(rng, b_shape, dtype, transposed[1])
    out = np.full((*a_shape[:-1], b_shape[-1]), np.nan, dtype)
    assert gemm_part.part_table(a, b, out, mode) is not None
    assert dot_split.split_matmul(a, b, out)
    assert modes == [mode]
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=0, atol=8 * eps * a_shape[-1])


def test_a_strided_result_is_written_in_place(monkeypatch):
    """Convolutions hand the split a column slice of a bigger product (ldc > n)."""
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 300)).astype(np.float32)
    b = rng.standard_normal((300, 96)).astype(np.float32)
    whole = np.full((256, 2, 96), np.nan, np.float32)
    assert dot_split.split_matmul(a, b, whole[:, 0])
    np.testing.assert_allclose(whole[:, 0], a @ b, rtol=0, atol=8 * np.finfo(np.float32).eps * 300)
    assert np.isnan(whole[:, 1]).all()


def test_a_dtype_gemm_cannot_take_splits_with_numpy(monkeypatch):
    """No gemm for integers: the parts are np.matmul calls on the pool's Python threads, each
    with one BLAS thread."""
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    rng = np.random.default_rng(1)
    a = rng.integers(-5, 5, (256, 512)).astype(np.int32)
    b = rng.integers(-5, 5, (512, 128)).astype(np.int32)
    out = np.empty((256, 128), np.int32)
    assert gemm_part.part_table(a, b, out, gemm_part.ROWS) is None
    threads = set()
    real = np.matmul

    def spy(*args, **kw):
        threads.add((threading.get_ident(), _numpy_threads()))
        return real(*args, **kw)

    monkeypatch.setattr(dot_split.np, "matmul", spy)
    assert dot_split.split_matmul(a, b, out)
    assert len(threads) == 2 and all(count == 1 for _, count in threads)
    np.testing.assert_array_equal(out, real(a, b))


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
    real = dot_split._run_plan
    monkeypatch.setattr(
        dot_split, "_run_plan", lambda plan, *a: calls.append(plan is not None) or real(plan, *a)
    )
    plans, real_plan = [], dot_split._split_plan
    monkeypatch.setattr(dot_split, "_split_plan", lambda *a: plans.append(1) or real_plan(*a))
    b = Builder("big_dot")
    x = b.parameter(shape.array("f32", [256, 512]))
    w = b.parameter(shape.array("f32", [512, 384]))
    exe = hlort.compile(b.build(b.dot(x, w)), "cpu")
    rng = np.random.default_rng(2)
    xa = rng.standard_normal((256, 512)).astype(np.float32)
    wa = rng.standard_normal((512, 384)).astype(np.float32)
    got = exe(xa, wa)
    assert calls == [True], "the dot thunk did not run in split parts"
    exe(xa, wa)
    assert calls == [True, True] and plans == [1]  # planned once, by the thunk's FixedSplit
    np.testing.assert_allclose(np.asarray(got), xa @ wa, rtol=1e-5, atol=1e-4)
