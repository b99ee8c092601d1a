"""Independent steps run side by side (step_groups.py): which steps group, and that a grouped
program computes the interpreter's values (dots within the contraction tolerance of
contraction_tolerance.py, elementwise kernels and integer dots exactly), NaN, infinities and
-0.0 among the inputs."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import hlort
from hlort.interpreter.evaluator import evaluate
from hlort.text.parser import parse_module
from hlort_cpu import blas_threads, dot_split, step_groups, thread_pool
from hlort_cpu.step_groups import DOT, KERNEL, NAMING, StepGroup, group_steps

sys.path.insert(0, str(Path(__file__).parent))
from contraction_tolerance import assert_within  # noqa: E402

BACKWARD = """HloModule backward
ENTRY e {
  x = DT[64,256] parameter(0)
  w = DT[256,512] parameter(1)
  g = DT[64,512] parameter(2)
  dx = DT[64,256] dot(g, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  dw = DT[256,512] dot(x, g), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (DT[64,256], DT[256,512]) tuple(dx, dw)
}
"""
UPDATE = """HloModule update
add_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY e {
  p = f32[256,512] parameter(0)
  m = f32[256,512] parameter(1)
  v = f32[256,512] parameter(2)
  x = f32[256,512] parameter(3)
  eps = f32[] constant(1e-08)
  epss = f32[256,512] broadcast(eps), dimensions={}
  lr = f32[] constant(0.001)
  lrs = f32[256,512] broadcast(lr), dimensions={}
  root_v = f32[256,512] sqrt(v)
  den = f32[256,512] add(root_v, epss)
  q = f32[256,512] divide(m, den)
  step = f32[256,512] multiply(lrs, q)
  p2 = f32[256,512] subtract(p, step)
  xx = f32[256,512] multiply(x, x)
  zero = f32[] constant(0)
  r = f32[512] reduce(xx, zero), dimensions={0}, to_apply=add_f32
  ROOT t = (f32[256,512], f32[256,512], f32[512]) tuple(p2, q, r)
}
"""


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setenv("HLORT_CPU_THREADS", "2")
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(dot_split, "_PLANS", {})
    monkeypatch.setattr(dot_split, "_WHOLE", {})


def _values(rng, dims, dtype):
    if np.dtype(dtype).kind == "i":  # two huge values: some sums wrap around
        x = rng.integers(-50, 50, dims).astype(dtype)
        x.reshape(-1)[rng.choice(x.size, 2, replace=False)] = [2**62, -(2**62)]
        return x
    x = rng.standard_normal(dims)
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 4, replace=False)] = [np.nan, np.inf, -np.inf, -0.0]
    return x.astype(dtype)


def _groups(exe) -> list[StepGroup]:
    return [s for s, _ in exe.raw.program.schedule if isinstance(s, StepGroup)]


@pytest.mark.skipif(not blas_threads.available(), reason="no per-thread BLAS thread count")
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_two_independent_dots_run_whole_side_by_side(two_threads, dtype):
    text = BACKWARD.replace("DT", dtype)
    rng = np.random.default_rng(4)
    np_dtype = np.float32 if dtype == "f32" else np.float64
    args = [_values(rng, d, np_dtype) for d in ((64, 256), (256, 512), (64, 512))]
    exe = hlort.compile(text, "cpu")
    (group,) = _groups(exe)
    assert [m.group_kind for m in group.members] == [DOT, DOT] and group.whole
    # f32 dx = g w^T (m 64 < n 256, k 512) runs transposed and is copied back after the group
    assert [m.transposed for m in group.members].count(True) == (dtype == "f32")
    got = exe.raw.program.run(args)
    want = evaluate(parse_module(text), args)
    x, w, g = (a.astype(np.float64) for a in args)
    eps = float(np.finfo(np_dtype).eps)
    for out, ref, (a, b, k) in zip(got, want, [(g, w.T, 512), (x.T, g, 64)], strict=True):
        magnitude = np.nan_to_num(np.abs(a) @ np.abs(b), posinf=0.0)
        tol = 2 * (k + 2) * eps * magnitude + eps * np.nan_to_num(np.abs(np.asarray(ref)))
        assert_within(np.asarray(out), np.asarray(ref), tol)


def test_integer_dots_group_and_fall_back_to_numpy_inside_the_group(two_threads):
    """gemm cannot take s64: each member computes its product with NumPy, exactly."""
    text = BACKWARD.replace("DT", "s64")
    rng = np.random.default_rng(5)
    args = [_values(rng, d, np.int64) for d in ((64, 256), (256, 512), (64, 512))]
    exe = hlort.compile(text, "cpu")
    assert len(_groups(exe)) == 1
    for out, ref in zip(exe.raw.program.run(args), evaluate(parse_module(text), args), strict=True):
        np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


def test_a_big_update_and_a_reduce_run_side_by_side_exactly(two_threads):
    rng = np.random.default_rng(6)
    args = [_values(rng, (256, 512), np.float32) for _ in range(3)]
    args[2] = np.abs(args[2])  # v >= 0 (sqrt), NaN and inf kept
    args.append(_values(rng, (256, 512), np.float32))
    exe = hlort.compile(UPDATE, "cpu")
    (group,) = _groups(exe)
    assert [m.group_kind for m in group.members] == [KERNEL, KERNEL] and not group.whole
    want = evaluate(parse_module(UPDATE), args)
    for _ in range(3):  # the same values on every call
        got = exe.raw.program.run(args)
        for out, ref in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))


def test_a_dot_beside_a_kernel_keeps_its_split_parts(two_threads):
    """One heavy dot beside a heavy kernel: it runs in split_matmul's parts, the kernel's
    chunks after them."""
    text = UPDATE.replace(
        "ROOT t = (f32[256,512], f32[256,512], f32[512]) tuple(p2, q, r)",
        "d = f32[512,512] dot(x, m), lhs_contracting_dims={0}, rhs_contracting_dims={0}\n"
        "  ROOT t = (f32[256,512], f32[256,512], f32[512], f32[512,512]) tuple(p2, q, r, d)",
    )
    rng = np.random.default_rng(7)
    args = [np.abs(_values(rng, (256, 512), np.float32)) for _ in range(4)]
    exe = hlort.compile(text, "cpu")
    groups = _groups(exe)
    assert any(DOT in [m.group_kind for m in g.members] for g in groups)
    assert not any(g.whole for g in groups)
    got, want = exe.raw.program.run(args), evaluate(parse_module(text), args)
    for out, ref in zip(got[:3], want[:3], strict=True):
        np.testing.assert_array_equal(np.asarray(out), np.asarray(ref))
    x, m = args[3].astype(np.float64), args[1].astype(np.float64)
    eps = float(np.finfo(np.float32).eps)
    magnitude = np.nan_to_num(np.abs(x.T) @ np.abs(m), posinf=0.0)
    tol = 2 * 258 * eps * magnitude + eps * np.nan_to_num(np.abs(np.asarray(want[3])))
    assert_within(np.asarray(got[3]), np.asarray(want[3]), tol)


def test_one_thread_keeps_the_program_order(monkeypatch):
    monkeypatch.setenv("HLORT_CPU_THREADS", "1")
    monkeypatch.setenv("HLORT_CACHE", "0")
    assert _groups(hlort.compile(BACKWARD.replace("DT", "f32"), "cpu")) == []


class _Step:
    """A stand-in step: what group_steps reads of one."""

    def __init__(self, out, ins, kind=KERNEL, work=1 << 20):
        self.out, self.ins, self.group_kind, self.work = out, ins, kind, work
        self.groupable = True

    def __call__(self, env):
        env[self.out] = self.out


def _plan(steps, arena=()):
    schedule = [(s, (k,)) for k, s in enumerate(steps)]
    return group_steps(schedule, set(arena))


def _members(schedule):
    return [[m.out for m in s.members] for s, _ in schedule if isinstance(s, StepGroup)]


@pytest.fixture
def two_workers(monkeypatch):
    monkeypatch.setattr(step_groups, "worker_count", lambda: 2)
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)


def test_a_step_joins_only_when_it_reads_nothing_made_from_the_first_on(two_workers):
    a = _Step(10, [0])
    named = _Step(11, [10], NAMING)  # get-tuple-element of a
    b = _Step(12, [11])  # reads a through the element: stays
    c = _Step(13, [1])
    planned = _plan([a, named, b, c])
    assert _members(planned) == [[10, 13]]
    assert planned[3][0] is not c and planned[3][1] == (3,)  # its releases stay in place


def test_a_barrier_stops_the_search_and_arena_results_do_not_move(two_workers):
    barrier = _Step(11, [0], kind=None)
    assert _members(_plan([_Step(10, [0]), barrier, _Step(12, [1])])) == []
    assert _members(_plan([_Step(10, [0]), _Step(12, [1])], arena=[12])) == []
    assert _members(_plan([_Step(10, [0], work=100), _Step(12, [1], work=100)])) == []


def test_a_moved_step_no_longer_blocks_the_steps_after_it(two_workers):
    """d reads c, which moved up beside a: d may join b's group."""
    a, b = _Step(10, [0], DOT), _Step(11, [10])
    c, d = _Step(12, [1], DOT), _Step(13, [12])
    assert _members(_plan([a, b, c, d])) == [[10, 12], [11, 13]]


def test_dots_run_whole_only_when_balanced(two_workers):
    even = _plan([_Step(10, [0], DOT, 1 << 22), _Step(11, [1], DOT, 1 << 22)])
    assert [s.whole for s, _ in even if isinstance(s, StepGroup)] == [True]
    uneven = _plan([_Step(10, [0], DOT, 1 << 24), _Step(11, [1], DOT, 1 << 21)])
    assert [s.whole for s, _ in uneven if isinstance(s, StepGroup)] == [False]
