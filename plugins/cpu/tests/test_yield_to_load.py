"""On a crowded machine a dispatch runs its chunks on the calling thread, in order
(thread_pool.crowded): the run queue count decides, every chunk still runs exactly once, and a
program computes the same bits as with the pool."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort_cpu import spin_pool_ir, step_groups, thread_pool

sys.path.insert(0, str(Path(__file__).parent))
from test_spin_pool import Marks, _ranges, marker  # noqa: E402, F401
from test_step_groups import UPDATE, _values  # noqa: E402

pytestmark = pytest.mark.skipif(
    spin_pool_ir.supported() is not None, reason="the native pool needs Linux futexes"
)


class _Pool:
    def __init__(self, workers: int, sleeping: int):
        self.workers, self.sleeping = workers, sleeping

    def sleepers(self) -> int:
        return self.sleeping


def _queue(tmp_path, running: int, total: int = 300) -> thread_pool._RunQueue:
    path = tmp_path / "loadavg"
    path.write_text(f"0.50 0.40 0.30 {running}/{total} 12345\n")
    return _reading(path)


def _reading(path) -> thread_pool._RunQueue:
    queue = thread_pool._RunQueue()
    if queue.fd is not None:
        os.close(queue.fd)
    queue.enabled, queue.fd = True, os.open(path, os.O_RDONLY)
    return queue


@pytest.mark.parametrize(
    "running, sleeping, crowded",
    [
        (2, 0, False),  # this thread and its awake worker: nobody else
        (1, 1, False),  # the worker sleeps: only this thread runs
        (3, 0, True),  # one more runnable thread than the two cores
        (2, 1, True),  # the worker sleeps and someone else runs
        (7, 0, True),
    ],
)
def test_the_run_queue_beyond_this_pool_decides(tmp_path, monkeypatch, running, sleeping, crowded):
    monkeypatch.setattr(thread_pool, "_machine_cpus", lambda: 2)
    queue = _queue(tmp_path, running)
    assert queue.check(_Pool(1, sleeping)) is crowded
    os.close(queue.fd)


def test_the_count_is_compared_with_the_machines_cpus_not_the_affinity(tmp_path, monkeypatch):
    """/proc/loadavg is machine-wide: 10 runnable threads on a 64-CPU host do not crowd a process
    pinned to two of its CPUs (it would otherwise never use its second core)."""
    monkeypatch.setattr(thread_pool, "_cores", lambda: 2)
    monkeypatch.setattr(thread_pool, "_machine_cpus", lambda: 64)
    queue = _queue(tmp_path, 10)
    assert not queue.check(_Pool(1, 0))
    os.close(queue.fd)


def test_the_count_is_read_at_most_once_per_interval(tmp_path, monkeypatch):
    monkeypatch.setattr(thread_pool, "_machine_cpus", lambda: 2)
    queue = _queue(tmp_path, 7)
    assert queue.check(_Pool(1, 0))
    (tmp_path / "loadavg").write_text("0 0 0 1/300 1\n")  # the cached answer stands
    assert queue.check(_Pool(1, 0))
    queue.checked -= queue.CHECK_NS
    assert not queue.check(_Pool(1, 0))
    os.close(queue.fd)


def test_an_unreadable_count_never_crowds(tmp_path, monkeypatch):
    monkeypatch.setattr(thread_pool, "_machine_cpus", lambda: 2)
    path = tmp_path / "loadavg"
    path.write_text("garbage\n")
    queue = _reading(path)
    assert not queue.check(_Pool(1, 0)) and not queue.enabled
    os.close(queue.fd)


@pytest.mark.parametrize(
    "running, sleeping, free",
    [
        (8, 0, 8),  # this thread and its 7 awake workers: all free
        (9, 0, 8),  # one more: within the slack of cores // 8
        (10, 0, 7),  # two more: one thread less
        (12, 0, 5),
        (9, 5, 3),  # 5 workers asleep: 6 runnable others, 5 beyond the slack
        (40, 0, 1),  # floor: the calling thread
    ],
)
def test_each_other_runnable_thread_beyond_the_slack_takes_one_thread(
    tmp_path, monkeypatch, running, sleeping, free
):
    """Proportional on an 8-CPU machine with a pool of 7 workers: a few other threads take a
    few threads, not all but one; crowded (inline) only when fewer than two are left."""
    monkeypatch.setattr(thread_pool, "_machine_cpus", lambda: 8)
    queue = _queue(tmp_path, running)
    assert queue.threads(_Pool(7, sleeping)) == free
    assert queue.check(_Pool(7, sleeping)) is (free < 2)
    os.close(queue.fd)


@pytest.mark.parametrize("chunks, runs", [(7, 2), (7, 3), (4, 3), (200, 5), (5, 4)])
def test_merged_runs_cover_the_chunks_in_order(chunks, runs):
    ranges = thread_pool.split(1000, chunks)
    out = thread_pool.merged(ranges, runs)
    assert len(out) == runs and out[0][0] == 0 and out[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(out, out[1:], strict=False))
    bounds = {b for r in ranges for b in r}
    assert all(b in bounds for r in out for b in r)  # runs of whole chunks
    assert thread_pool.merged([(0, 3), (4, 6)], 1) is None  # not contiguous: left as is


def test_fewer_threads_free_than_chunks_run_each_chunk_once(marker, monkeypatch):  # noqa: F811
    """Three threads free for seven chunks: three runs, every element once."""
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(thread_pool, "threads_free", lambda pool, ranges=None: 3)
    pool = thread_pool.native_pool(thread_pool.worker_count() - 1)
    if pool is None:
        pytest.skip("no native pool here")
    seen = []
    run = pool.run
    monkeypatch.setattr(
        type(pool),
        "run",
        lambda self, fn, t, ts, ranges, n: (seen.append(n), run(fn, t, ts, ranges, n)),
    )
    marks = Marks(100)
    thread_pool.run_chunks(marker, marks.table, _ranges(100, 7))
    np.testing.assert_array_equal(marks.counts, 1)
    assert seen == [3]


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("HLORT_CPU_YIELD_TO_LOAD", "0")
    assert not thread_pool._RunQueue().enabled


@pytest.fixture
def crowd(monkeypatch):
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    state = {"crowded": True}
    monkeypatch.setattr(thread_pool, "crowded", lambda pool, ranges=None: state["crowded"])
    free = lambda pool, ranges=None: 1 if state["crowded"] else 1 + pool.workers  # noqa: E731
    monkeypatch.setattr(thread_pool, "threads_free", free)
    monkeypatch.setattr(step_groups, "crowded", lambda pool, ranges=None: state["crowded"])
    return state


def test_crowded_chunks_run_once_each_on_the_caller(marker, crowd):  # noqa: F811
    marks = Marks(100)
    thread_pool.run_chunks(marker, marks.table, _ranges(100, 7))
    thread_pool.run_chunks(marker, [marks.table] * 2, _ranges(100, 2))  # per-chunk tables
    np.testing.assert_array_equal(marks.counts, 2)
    assert set(marks.tids.tolist()) == {threading.get_native_id()}


def test_a_crowded_program_computes_the_same_bits(crowd, monkeypatch):
    """A step group and split kernels, crowded and not: the same chunks, the same values."""
    monkeypatch.setenv("HLORT_CPU_THREADS", "2")
    monkeypatch.setenv("HLORT_CACHE", "0")
    rng = np.random.default_rng(8)
    args = [_values(rng, (256, 512), np.float32) for _ in range(3)]
    args[2] = np.abs(args[2])
    args.append(_values(rng, (256, 512), np.float32))
    program = hlort.compile(UPDATE, "cpu").raw.program
    assert any(isinstance(s, step_groups.StepGroup) for s, _ in program.schedule)
    crowded = program.run(args)
    crowd["crowded"] = False
    pooled = program.run(args)
    for a, b in zip(crowded, pooled, strict=True):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


MATMUL = """HloModule matmul
ENTRY e {
  a = f32[256,512] parameter(0)
  b = f32[512,1024] parameter(1)
  ROOT d = f32[256,1024] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
"""


def test_programs_keep_their_bits_with_any_number_of_threads_free(monkeypatch):
    """Split kernels (a column reduce among them) and a dot split in gemm parts, planned for 4
    threads, run with 4, 3, 2 (chunks merged in runs) and 1 free (inline): the same bits."""
    from hlort_cpu import dot_split

    monkeypatch.setenv("HLORT_CPU_THREADS", "4")
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(dot_split, "_PLANS", {})
    monkeypatch.setattr(dot_split, "_WHOLE", {})
    free = {"n": 4}
    monkeypatch.setattr(thread_pool, "threads_free", lambda pool, ranges=None: free["n"])
    monkeypatch.setattr(thread_pool, "crowded", lambda pool, ranges=None: free["n"] < 2)
    monkeypatch.setattr(step_groups, "crowded", lambda pool, ranges=None: free["n"] < 2)
    rng = np.random.default_rng(9)
    update = [_values(rng, (256, 512), np.float32) for _ in range(4)]
    update[2] = np.abs(update[2])
    matmul = [_values(rng, (256, 512), np.float32), _values(rng, (512, 1024), np.float32)]
    for text, args in ((UPDATE, update), (MATMUL, matmul)):
        program = hlort.compile(text, "cpu").raw.program
        results = []
        for n in (4, 3, 2, 1):
            free["n"] = n
            results.append(program.run(args))
        for other in results[1:]:
            for a, b in zip(results[0], other, strict=True):
                np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))
