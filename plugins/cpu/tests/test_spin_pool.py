"""The native spinning pool (spin_pool.py): every chunk runs exactly once, on the caller and
the workers, from several dispatching threads at once, after a fork, and never when one
thread is asked for; a pool that cannot be built falls back to Python threads with a warning."""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest

from hlort_cpu import spin_pool, spin_pool_ir, thread_pool
from hlort_cpu.codegen.compiled import KERNEL_CFUNC

pytestmark = pytest.mark.skipif(
    spin_pool_ir.supported() is not None, reason="the native pool needs Linux futexes"
)

_SYS_GETTID = {"x86_64": 186, "amd64": 186, "aarch64": 178, "arm64": 178}
_TABLE = ctypes.c_void_p * 2

# out0[i] += 1 (exactly-once markers) and out1[i] = the thread id that ran index i
_IR = """
declare i64 @syscall(i64, ...)
define void @NAME(ptr %t, i64 %b, i64 %e) {
entry:
  %out = load ptr, ptr %t
  %tp = getelementptr inbounds ptr, ptr %t, i64 1
  %tids = load ptr, ptr %tp
  %tid = call i64 (i64, ...) @syscall(i64 GETTID)
  %any = icmp slt i64 %b, %e
  br i1 %any, label %body, label %done
body:
  %i = phi i64 [%b, %entry], [%i1, %body]
  %p = getelementptr inbounds i64, ptr %out, i64 %i
  %v = load i64, ptr %p
  %v1 = add i64 %v, 1
  store i64 %v1, ptr %p
  %q = getelementptr inbounds i64, ptr %tids, i64 %i
  store i64 %tid, ptr %q
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %e
  br i1 %more, label %body, label %done
done:
  ret void
}
"""


@pytest.fixture(scope="module")
def marker():
    import platform

    from hlort_cpu.codegen.jit import jit_engine

    engine = jit_engine()
    name = f"hltest_spin_pool_marker_{os.getpid()}"
    gettid = _SYS_GETTID[platform.machine().lower()]
    ir = _IR.replace("NAME", name).replace("GETTID", str(gettid))
    return KERNEL_CFUNC(engine.load_object(engine.compile_ir(ir), [name])[name])


class Marks:
    def __init__(self, size: int):
        self.counts = np.zeros(size, np.int64)
        self.tids = np.zeros(size, np.int64)
        self.table = _TABLE(self.counts.ctypes.data, self.tids.ctypes.data)


def _ranges(extent: int, n: int) -> thread_pool.Ranges:
    return thread_pool.split(extent, n)


@pytest.fixture
def pool():
    p = spin_pool.SpinPool(3)
    yield p
    assert p.stop()


@pytest.mark.parametrize("n", [2, 3, 4, 5, 9, 200])
def test_every_range_runs_exactly_once(marker, pool, n):
    """More chunks than workers (the caller runs the rest), fewer (idle workers skip)."""
    marks = Marks(1000)
    ranges = _ranges(1000, n)
    for _ in range(300):
        pool.run(marker, marks.table, None, ranges.bounds(), len(ranges))
    np.testing.assert_array_equal(marks.counts, 300)


def test_empty_ranges_and_uneven_ranges(marker, pool):
    marks = Marks(10)
    ranges = thread_pool.Ranges([(0, 0), (0, 7), (7, 7), (7, 10)])
    pool.run(marker, marks.table, None, ranges.bounds(), 4)
    np.testing.assert_array_equal(marks.counts, 1)


def test_the_caller_runs_the_first_chunk_and_claims_the_rest_with_the_workers(marker, pool):
    """Chunk 0 is the caller's; the others go to whoever claims them first (the caller too,
    when no worker has started one: a sleeping worker costs no wait)."""
    marks = Marks(64)
    ranges = _ranges(64, 16)
    caller = threading.get_native_id()
    runners = {caller, *(t.native_id for t in pool.threads)}
    for _ in range(50):
        pool.run(marker, marks.table, None, ranges.bounds(), len(ranges))
        assert marks.tids[0] == caller
        assert set(marks.tids.tolist()) <= runners
    np.testing.assert_array_equal(marks.counts, 50)


def test_one_table_per_chunk(marker, pool):
    """Per-chunk tables (a sort's scratch): chunk i gets table i."""
    parts = [Marks(8) for _ in range(4)]
    ranges = _ranges(8, 4)
    tables = (ctypes.c_void_p * 4)(*[ctypes.addressof(p.table) for p in parts])
    pool.run(marker, None, tables, ranges.bounds(), 4)
    for k, (b, e) in enumerate(ranges):
        expected = np.zeros(8, np.int64)
        expected[b:e] = 1
        np.testing.assert_array_equal(parts[k].counts, expected)


def test_concurrent_dispatch_from_four_threads(marker, pool):
    """Four threads dispatch at once (multi-device runs): whoever finds the pool busy runs its
    chunks inline; no chunk is lost or run twice."""
    marks = [Marks(997) for _ in range(4)]
    ranges = _ranges(997, 4)
    errors = []

    def go(m: Marks) -> None:
        try:
            for _ in range(500):
                pool.run(marker, m.table, None, ranges.bounds(), len(ranges))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=go, args=(m,)) for m in marks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for m in marks:
        np.testing.assert_array_equal(m.counts, 500)


def test_run_chunks_uses_the_process_pool(marker, monkeypatch):
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    marks = Marks(100)
    thread_pool.run_chunks(marker, marks.table, [(0, 50), (50, 100)])  # a plain list
    thread_pool.run_chunks(marker, [marks.table, marks.table], _ranges(100, 2))
    np.testing.assert_array_equal(marks.counts, 2)
    assert spin_pool._POOL is not None


def test_a_stopped_pool_runs_dispatches_inline(marker):
    p = spin_pool.SpinPool(2)
    assert p.stop()
    assert not any(t.is_alive() for t in p.threads)
    marks = Marks(9)
    p.run(marker, marks.table, None, _ranges(9, 3).bounds(), 3)
    np.testing.assert_array_equal(marks.counts, 1)
    assert set(marks.tids.tolist()) == {threading.get_native_id()}


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # 3.12+: fork with threads
def test_a_forked_child_gets_a_fresh_pool(marker, monkeypatch):
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    marks = Marks(64)
    thread_pool.run_chunks(marker, marks.table, _ranges(64, 2))  # the parent's pool exists
    parent_pool = spin_pool._POOL
    pid = os.fork()
    if pid == 0:  # the child: must not use the parent's (absent) threads
        code = 1
        try:
            signal.alarm(60)
            assert spin_pool._POOL is None
            for _ in range(100):
                thread_pool.run_chunks(marker, marks.table, _ranges(64, 2))
            code = 0 if (marks.counts == 101).all() and spin_pool._POOL is not None else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert spin_pool._POOL is parent_pool
    np.testing.assert_array_equal(marks.counts, 1)


def _python(code: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_one_thread_makes_no_pool_and_exit_does_not_hang():
    code = """
import numpy as np, hlort
from hlort import Builder, shape
from hlort_cpu import spin_pool, thread_pool
b = Builder("add")
x = b.parameter(shape.array("f32", [512, 1024]))
exe = hlort.compile(b.build(b.add(x, x)), "cpu")
a = np.ones((512, 1024), np.float32)
assert (np.asarray(exe(a)) == 2).all()
print(len(thread_pool.chunks(1 << 20, 1)), spin_pool._POOL is not None)
"""
    one = _python(code, HLORT_CPU_THREADS="1")
    assert one.returncode == 0, one.stderr
    assert one.stdout.split() == ["1", "False"]
    two = _python(code, HLORT_CPU_THREADS="2")  # exits with the pool's workers spinning
    assert two.returncode == 0, two.stderr
    assert two.stdout.split() == ["2", "True"]


def test_a_pool_that_cannot_be_built_warns_and_python_threads_run(marker, monkeypatch, caplog):
    def broken():
        raise RuntimeError("llvmlite could not build the pool")

    monkeypatch.setattr(spin_pool, "_functions", broken)
    monkeypatch.setattr(spin_pool, "_POOL", None)
    monkeypatch.setattr(spin_pool, "_FAILED", False)
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    marks = Marks(10)
    with caplog.at_level(logging.WARNING, logger="hlort.cpu.pool"):
        thread_pool.run_chunks(marker, marks.table, _ranges(10, 2))
        thread_pool.run_chunks(marker, marks.table, _ranges(10, 2))
    np.testing.assert_array_equal(marks.counts, 2)
    warnings = [r for r in caplog.records if "native thread pool unavailable" in r.message]
    assert len(warnings) == 1 and "llvmlite could not build" in warnings[0].message


def test_the_pool_compiles_on_the_quick_path_and_runs(marker, monkeypatch):
    """The pool's code is no numeric loop: it is compiled by ``compile_ir_quickly`` (SROA and
    LLVM's fast instruction selector, not O3's vectorizers), and that code runs every chunk."""
    from hlort_cpu import compile_cache
    from hlort_cpu.codegen.jit import jit_engine

    engine = jit_engine()
    seen = []
    quickly = engine.compile_ir_quickly

    def spy(ir_text):
        seen.append(ir_text)
        return quickly(ir_text)

    monkeypatch.setattr(compile_cache, "lookup", lambda key: None)  # compile, do not load
    monkeypatch.setattr(engine, "compile_ir_quickly", spy)
    monkeypatch.setattr(engine, "compile_ir", lambda ir_text: pytest.fail("pool compiled at O3"))
    p = spin_pool.SpinPool(2)
    try:
        assert len(seen) == 1 and "_pool_worker" in seen[0]
        marks = Marks(500)
        ranges = _ranges(500, 7)
        for _ in range(100):
            p.run(marker, marks.table, None, ranges.bounds(), len(ranges))
        np.testing.assert_array_equal(marks.counts, 100)
    finally:
        assert p.stop()
