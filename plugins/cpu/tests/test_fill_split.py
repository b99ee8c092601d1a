"""A kernel that reads at most scalars (a constant fill, an iota) splits across cores only from
FILL_MIN_ELEMENTS (it only writes memory: two threads gain nothing below it and the hand-off
costs); a kernel that reads its inputs keeps splitting from PARALLEL_MIN_ELEMENTS. Both still
compute the interpreter's values."""

import numpy as np
import pytest

import hlort
from hlort.interpreter.evaluator import evaluate
from hlort.text.parser import parse_module
from hlort_cpu.thread_pool import FILL_MIN_ELEMENTS, PARALLEL_MIN_ELEMENTS
from hlort_cpu.thunks import KernelThunk

FILL = """HloModule fill
ENTRY e {{
  zero = f32[] constant(0.5)
  ROOT b = f32[{n}] broadcast(zero), dimensions={{}}
}}
"""
PLUS_ONE = """HloModule plus_one
ENTRY e {{
  x = f32[{n}] parameter(0)
  one = f32[] constant(1)
  ones = f32[{n}] broadcast(one), dimensions={{}}
  ROOT y = f32[{n}] add(x, ones)
}}
"""


def _kernel_ranges(text, args):
    exe = hlort.compile(text, "cpu")
    (thunk,) = [s for s, _ in exe.raw.program.schedule if isinstance(s, KernelThunk)]
    got = exe.raw.program.run(args)
    want = evaluate(parse_module(text), args)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want))
    return len(thunk.ranges)


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setenv("HLORT_CPU_THREADS", "2")
    monkeypatch.setenv("HLORT_CACHE", "0")


def test_a_fill_below_the_fill_minimum_runs_whole(two_threads):
    n = FILL_MIN_ELEMENTS // 2
    assert n >= 2 * PARALLEL_MIN_ELEMENTS  # a kernel with inputs of this size splits
    assert _kernel_ranges(FILL.format(n=n), []) == 1
    x = np.arange(n, dtype=np.float32)
    assert _kernel_ranges(PLUS_ONE.format(n=n), [x]) == 2


def test_a_big_fill_still_splits(two_threads):
    assert _kernel_ranges(FILL.format(n=2 * FILL_MIN_ELEMENTS), []) == 2
