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


def test_run_inline_if_idle_runs_on_the_caller_only_when_nothing_is_queued():
    queue = WorkQueue("q")
    ran = []
    assert queue.run_inline_if_idle(lambda: ran.append(threading.get_ident()))
    assert ran == [threading.get_ident()]  # on this thread, at once
    gate = threading.Event()
    blocker = queue.enqueue(lambda: gate.wait(10))
    assert not queue.run_inline_if_idle(lambda: ran.append("too early"))
    gate.set()
    blocker.result(timeout=10)
    queue.synchronize(timeout=10)
    assert queue.run_inline_if_idle(lambda: ran.append("idle again"))
    assert ran[1:] == ["idle again"]
    queue.close()
    with pytest.raises(FailedPrecondition, match="closed"):
        queue.run_inline_if_idle(lambda: None)


def test_jobs_enqueued_while_an_inline_job_runs_start_after_it():
    queue = WorkQueue("q")
    order = []
    inside, release = threading.Event(), threading.Event()

    def inline_job():
        order.append("inline start")
        inside.set()
        assert release.wait(10)
        order.append("inline end")

    caller = threading.Thread(target=queue.run_inline_if_idle, args=(inline_job,))
    caller.start()
    assert inside.wait(10)
    later = queue.enqueue(lambda: order.append("queued"))
    assert not later.is_ready()
    release.set()
    later.result(timeout=10)
    caller.join(10)
    assert order == ["inline start", "inline end", "queued"]
    queue.close()
