"""WorkQueue: in-order execution on one thread, errors to the waiter, dependencies honoured."""

import threading

import pytest

from hlort.errors import FailedPrecondition, InvalidArgument
from hlort.plugin.base import AsyncValue, WorkQueue


def test_jobs_run_in_submission_order_on_one_thread():
    queue = WorkQueue("q")
    order, threads = [], set()

    def job(i):
        order.append(i)
        threads.add(threading.get_ident())
        return i * 2

    futures = [queue.enqueue(lambda i=i: job(i)) for i in range(200)]
    assert [f.result(timeout=10) for f in futures] == [i * 2 for i in range(200)]
    assert order == list(range(200))
    assert len(threads) == 1 and threading.get_ident() not in threads
    queue.close()


def test_a_failing_job_fails_its_future_and_the_queue_goes_on():
    queue = WorkQueue("q")
    bad = queue.enqueue(lambda: (_ for _ in ()).throw(InvalidArgument("job failed")))
    good = queue.enqueue(lambda: "fine")
    with pytest.raises(InvalidArgument, match="job failed"):
        bad.result(timeout=10)
    assert good.result(timeout=10) == "fine"
    queue.close()


def test_enqueue_returns_before_the_job_runs():
    queue = WorkQueue("q")
    gate = threading.Event()
    future = queue.enqueue(lambda: gate.wait(10) and "done")
    assert not future.is_ready()
    gate.set()
    assert future.result(timeout=10) == "done"
    queue.close()


def test_waits_for_dependencies_and_propagates_their_error_without_running():
    queue = WorkQueue("q")
    dep = AsyncValue("dependency")
    ran = []
    future = queue.enqueue(lambda: ran.append(1), waits_for=[dep])
    dep.set_error(InvalidArgument("upstream failed"))
    with pytest.raises(InvalidArgument, match="upstream failed"):
        future.result(timeout=10)
    assert ran == []
    queue.close()


def test_synchronous_mode_runs_inline():
    queue = WorkQueue("q", synchronous=True)
    ident = []
    queue.enqueue(lambda: ident.append(threading.get_ident())).result()
    assert ident == [threading.get_ident()]


def test_close_finishes_queued_work_then_refuses_more():
    queue = WorkQueue("q")
    futures = [queue.enqueue(lambda i=i: i) for i in range(10)]
    queue.synchronize(timeout=10)
    queue.close()
    assert [f.result() for f in futures] == list(range(10))
    assert queue.closed
    with pytest.raises(FailedPrecondition, match="closed"):
        queue.enqueue(lambda: None)
