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


def test_the_switch_turns_it_off(monkeypatch):
    monkeypatch.setenv("HLORT_CPU_YIELD_TO_LOAD", "0")
    assert not thread_pool._RunQueue().enabled


@pytest.fixture
def crowd(monkeypatch):
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    state = {"crowded": True}
    monkeypatch.setattr(thread_pool, "crowded", lambda pool: state["crowded"])
    monkeypatch.setattr(step_groups, "crowded", lambda pool: state["crowded"])
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
