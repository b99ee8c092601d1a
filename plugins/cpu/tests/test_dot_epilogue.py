"""A dot and the row kernel that reads it row by row, in one dispatch (dot_epilogue.py): which
pairs chain, that the chained step gives the bits of the two steps run one after the other
(row counts not a multiple of the gemm parts' 16-row blocking, NaN and infinities in rows, the
pool and the caller-only order), the interpreter's values within the dot tolerance carried
through softmax, and the run-time fallbacks (one thread, an output sharing the operands' bytes).

Tolerance against the interpreter: the dot's (contraction_tolerance.py: ``2 (k + 2) eps
sum |a b|`` per element) moves a softmax output ``s_i`` of its row by at most ``2 s_i`` times
the row's largest dot error, plus 8 eps ``s_i`` for the kernel's exp and divide."""

from __future__ import annotations

import numpy as np
import pytest

import hlort
from hlort.interpreter.evaluator import evaluate
from hlort.text.parser import parse_module
from hlort_cpu import blas_threads, dot_epilogue, dot_split, thread_pool
from hlort_cpu.dot_epilogue import DotEpilogue, row_local

SEED = """HloModule seed
mx {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] maximum(p, q)
}
ad {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY e {
  x = f32[M,K] parameter(0)
  w = f32[K,N] parameter(1)
  b = f32[N] parameter(2)
  d = f32[M,N] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  b2 = f32[M,N] broadcast(b), dimensions={1}
  a = f32[M,N] add(d, b2)
  z = f32[] constant(0)
  zb = f32[M,N] broadcast(z), dimensions={}
  r = f32[M,N] maximum(a, zb)
  ni = f32[] constant(-inf)
  m = f32[M] reduce(r, ni), dimensions={1}, to_apply=mx
  mb = f32[M,N] broadcast(m), dimensions={0}
  s = f32[M,N] subtract(r, mb)
  ex = f32[M,N] exponential(s)
  t = f32[M] reduce(ex, z), dimensions={1}, to_apply=ad
  tb = f32[M,N] broadcast(t), dimensions={0}
  ROOT o = f32[M,N] divide(ex, tb)
}
"""
needs_blas = pytest.mark.skipif(not blas_threads.available(), reason="no per-thread BLAS count")


def _text(m: int, k: int, n: int, body: str = SEED) -> str:
    return (
        body.replace("M,", f"{m},")
        .replace("[M]", f"[{m}]")
        .replace("K", str(k))
        .replace("N]", f"{n}]")
    )


@pytest.fixture
def threads(monkeypatch):
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(dot_split, "_PLANS", {})

    def use(n: int, pool: bool = True):
        monkeypatch.setenv("HLORT_CPU_THREADS", str(n))
        monkeypatch.setattr(thread_pool, "_RUN_QUEUE", None)
        monkeypatch.setenv("HLORT_CPU_YIELD_TO_LOAD", "0" if pool else "1")
        if not pool:  # always crowded: every chunk on the caller, in order
            monkeypatch.setattr("hlort_cpu.dot_epilogue.crowded", lambda p, ranges=None: True)
            monkeypatch.setattr(thread_pool, "crowded", lambda p, ranges=None: True)

    return use


def _inputs(m: int, k: int, n: int, special: bool = True):
    rng = np.random.default_rng(m + k + n)
    x = (rng.standard_normal((m, k)) / np.sqrt(k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    if special:  # a NaN row, an inf row (inf - inf: NaN), a -inf row (all zero: 0/0), -0.0
        x[1, 3], x[m // 2, 0], x[m - 1, 5], x[2, 7] = np.nan, np.inf, -np.inf, -0.0
    return [x, w, b]


def _epilogues(exe) -> list:
    return [s for s, _ in exe.raw.program.schedule if isinstance(s, DotEpilogue)]


def _unchained(monkeypatch, text: str, args):
    """The program's result with the pairs left as two steps (today's path)."""
    with monkeypatch.context() as patch:
        patch.setattr(dot_epilogue, "chain_epilogues", lambda schedule: schedule)
        exe = hlort.compile(text, "cpu")
        assert not _epilogues(exe)
        return np.asarray(exe.raw.program.run(args)[0])


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint32)


@needs_blas
@pytest.mark.parametrize("pool", [True, False], ids=["pool", "caller"])
@pytest.mark.parametrize("shape", [(512, 512, 512), (500, 256, 384), (300, 96, 272)])
def test_the_chained_step_gives_the_two_steps_bits(threads, monkeypatch, shape, pool):
    threads(2, pool)
    text, args = _text(*shape), _inputs(*shape)
    exe = hlort.compile(text, "cpu")
    assert len(_epilogues(exe)) == 1
    want = _unchained(monkeypatch, text, args)
    for _ in range(3):  # the same bits on every call
        got = np.asarray(exe.raw.program.run(args)[0])
        np.testing.assert_array_equal(_bits(got), _bits(want))
    m, k, _n = shape
    assert np.isnan(got[1]).all() and np.isnan(got[m // 2]).all() and np.isnan(got[m - 1]).all()


@needs_blas
def test_the_chained_step_is_within_the_dot_tolerance_of_the_interpreter(threads):
    threads(2)
    shape = (500, 256, 384)
    text, args = _text(*shape), _inputs(*shape)
    exe = hlort.compile(text, "cpu")
    assert _epilogues(exe)
    got = np.asarray(exe.raw.program.run(args)[0]).astype(np.float64)
    ref = np.asarray(evaluate(parse_module(text), args)).astype(np.float64)
    x, w, _b = (a.astype(np.float64) for a in args)
    eps = float(np.finfo(np.float32).eps)
    with np.errstate(invalid="ignore"):
        dot_tol = 2 * (shape[1] + 2) * eps * np.nan_to_num(np.abs(x) @ np.abs(w), posinf=0.0)
    row_tol = dot_tol.max(axis=1, keepdims=True)
    tol = np.abs(ref) * (2 * row_tol + 8 * eps) + float(np.finfo(np.float32).smallest_subnormal)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    finite = ~np.isnan(ref)
    assert (np.abs(got - ref)[finite] <= tol[finite]).all()


@needs_blas
def test_one_thread_runs_the_two_steps(threads, monkeypatch):
    threads(1)
    shape = (512, 512, 512)
    text, args = _text(*shape), _inputs(*shape)
    assert not _epilogues(hlort.compile(text, "cpu"))
    threads(2)
    exe = hlort.compile(text, "cpu")
    (step,) = _epilogues(exe)
    threads(1)  # compiled for two threads, run with one: the steps as they are
    want = _unchained(monkeypatch, text, args)
    np.testing.assert_array_equal(_bits(np.asarray(exe.raw.program.run(args)[0])), _bits(want))


@needs_blas
def test_an_output_sharing_the_operands_bytes_runs_the_two_steps(threads, monkeypatch):
    """Were the kernel's output (an arena view) to reuse ``w``'s bytes, the first rows' kernel
    would overwrite ``w`` while later gemm parts still read it: the step runs one after the
    other instead (each chunk on the caller, in order, so a missed check would fail)."""
    threads(2, pool=False)
    shape = (512, 512, 512)
    text, args = _text(*shape), _inputs(*shape, special=False)
    want = _unchained(monkeypatch, text, args)
    exe = hlort.compile(text, "cpu")
    (step,) = _epilogues(exe)
    program = exe.raw.program
    env: list = [None] * program.n_slots
    for (slot, _), value in zip(program.params, [a.copy() for a in args], strict=True):
        env[slot] = value
    w_slot = step.dot.ins[1]
    env[step.kernel.out] = env[w_slot]  # the output is w's memory
    step(env)
    np.testing.assert_array_equal(_bits(env[step.kernel.out]), _bits(want))


BATCHED = """HloModule batched
mx {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] maximum(p, q)
}
ad {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY e {
  q = f32[6,100,32] parameter(0)
  k = f32[6,32,120] parameter(1)
  s = f32[6,100,120] dot(q, k), lhs_batch_dims={0}, rhs_batch_dims={0},
    lhs_contracting_dims={2}, rhs_contracting_dims={1}
  ni = f32[] constant(-inf)
  m = f32[6,100] reduce(s, ni), dimensions={2}, to_apply=mx
  mb = f32[6,100,120] broadcast(m), dimensions={0,1}
  d = f32[6,100,120] subtract(s, mb)
  ex = f32[6,100,120] exponential(d)
  z = f32[] constant(0)
  t = f32[6,100] reduce(ex, z), dimensions={2}, to_apply=ad
  tb = f32[6,100,120] broadcast(t), dimensions={0,1}
  o = f32[6,100,120] divide(ex, tb)
  ROOT r = (f32[6,100], f32[6,100,120]) tuple(t, o)
}
"""
RESHAPED = """HloModule reshaped
ad {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY e {
  x = f32[4,128,256] parameter(0)
  w = f32[256,256] parameter(1)
  y = f32[4,128,256] dot(x, w), lhs_contracting_dims={2}, rhs_contracting_dims={0}
  r = f32[4,128,256] add(y, x)
  z = f32[] constant(0)
  t = f32[4,128] reduce(r, z), dimensions={2}, to_apply=ad
  c = f32[] constant(0.00390625)
  cb = f32[4,128] broadcast(c), dimensions={}
  mu = f32[4,128] multiply(t, cb)
  mb = f32[4,128,256] broadcast(mu), dimensions={0,1}
  ROOT o = f32[4,128,256] subtract(r, mb)
}
"""
FLAT = """HloModule flat
ENTRY e {
  x = f32[M,K] parameter(0)
  w = f32[K,N] parameter(1)
  d = f32[M,N] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  zb = f32[M,N] broadcast(z), dimensions={}
  ROOT r = f32[M,N] maximum(d, zb)
}
"""


def _special(rng, dims) -> np.ndarray:
    x = rng.standard_normal(dims) / np.sqrt(dims[-1])
    flat = x.reshape(-1)
    flat[rng.choice(flat.size, 4, replace=False)] = [np.nan, np.inf, -np.inf, -0.0]
    return x.astype(np.float32)


@needs_blas
@pytest.mark.parametrize(
    "text, dims, kind",
    [
        (BATCHED, [(6, 100, 32), (6, 32, 120)], "row_reduce"),  # batch parts: 100 rows each
        (RESHAPED, [(4, 128, 256), (256, 256)], "row_reduce"),  # rows of [4,128] from [512]
        (_text(784, 96, 512, FLAT), [(784, 96), (96, 512)], "loop"),  # 16 rows a block
    ],
    ids=["batched", "reshaped", "flat-loop"],
)
def test_batch_parts_reshaped_results_and_flat_loops_chain_with_the_same_bits(
    threads, monkeypatch, text, dims, kind
):
    threads(2)
    rng = np.random.default_rng(len(text))
    args = [_special(rng, d) for d in dims]
    exe = hlort.compile(text, "cpu")
    (step,) = _epilogues(exe)
    assert step.kernel.kernel.info.kind == kind
    assert step.per == (16 if kind == "loop" else 1)  # the flat loop: 8192 elements a block
    got = exe.raw.program.run(args)
    with monkeypatch.context() as patch:
        patch.setattr(dot_epilogue, "chain_epilogues", lambda schedule: schedule)
        want = hlort.compile(text, "cpu").raw.program.run(args)
    for out, ref in zip(got, want, strict=True):
        np.testing.assert_array_equal(_bits(np.asarray(out)), _bits(np.asarray(ref)))


@needs_blas
def test_parts_that_split_a_flat_loops_block_run_the_two_steps(threads, monkeypatch):
    """[600, 256]: 32 rows a block of the flat loop, parts of 304 and 296 rows: the second
    part starts inside a block, so the step runs the gemm parts, then the whole kernel."""
    threads(2, pool=False)
    text = _text(600, 64, 256, FLAT)
    rng = np.random.default_rng(9)
    args = [_special(rng, d) for d in ((600, 64), (64, 256))]
    exe = hlort.compile(text, "cpu")
    (step,) = _epilogues(exe)
    assert step.per == 32
    got = np.asarray(exe.raw.program.run(args)[0])
    assert step.bounds[1] is None  # the kernel did not run on the parts
    want = _unchained(monkeypatch, text, args)
    np.testing.assert_array_equal(_bits(got), _bits(want))
    ref = np.asarray(evaluate(parse_module(text), args))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))


@needs_blas
@pytest.mark.parametrize(
    "change",
    [
        # the product's columns are more than its rows: dot_split cuts by columns
        lambda t: _text(64, 256, 1024, t),
        # a kernel too small to split (128 x 128): it runs on the caller after the dot already
        lambda t: _text(128, 128, 128, t),
        # the kernel reduces the product's columns (dimension 0): not row-local
        lambda t: (
            _text(512, 512, 512, t)
            .replace("dimensions={1}, to_apply=mx", "dimensions={0}, to_apply=mx")
            .replace(
                "mb = f32[512,512] broadcast(m), dimensions={0}",
                "mb = f32[512,512] broadcast(m), dimensions={1}",
            )
        ),
    ],
    ids=["columns", "small-kernel", "column-reduce"],
)
def test_pairs_that_do_not_fit_are_left_alone(threads, change):
    threads(2)
    text = change(SEED)
    exe = hlort.compile(text, "cpu")
    assert not _epilogues(exe)


@needs_blas
def test_a_loop_whose_output_is_not_the_products_shape_is_left_alone(threads):
    """A loop's iterations walk its output: the blocks of a [784, 512, 2] output (98 of 8192
    elements, where the product has 49) are not blocks of the product's rows."""
    threads(2)
    text = _text(784, 96, 512, FLAT).replace(
        "  ROOT r = f32[784,512] maximum(d, zb)",
        "  r = f32[784,512] maximum(d, zb)\n"
        "  ROOT o = f32[784,512,2] broadcast(r), dimensions={0,1}",
    )
    assert "f32[784,512,2]" in text
    exe = hlort.compile(text, "cpu")
    assert not _epilogues(exe)


def test_row_locality_of_fusions():
    module = parse_module(
        """HloModule f
ad {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY e {
  x = f32[8,4] parameter(0)
  v = f32[4] parameter(1)
  z = f32[] constant(0)
  t = f32[8] reduce(x, z), dimensions={1}, to_apply=ad
  tb = f32[8,4] broadcast(t), dimensions={0}
  vb = f32[8,4] broadcast(v), dimensions={1}
  s = f32[8,4] add(tb, vb)
  ROOT o = f32[8,4] multiply(s, x)
}
"""
    )
    comp = module.entry
    assert row_local(comp, 0, (8,))
    assert not row_local(comp, 0, (4,))  # rows are dimension 0
    assert not row_local(comp, 1, (8,))  # v is no [8, ...] operand
    across = parse_module(
        """HloModule g
ad {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT o = f32[] add(p, q)
}
ENTRY e {
  x = f32[8,8] parameter(0)
  z = f32[] constant(0)
  c = f32[8] reduce(x, z), dimensions={0}, to_apply=ad
  cb = f32[8,8] broadcast(c), dimensions={0}
  tr = f32[8,8] transpose(x), dimensions={1,0}
  ROOT o = f32[8,8] add(cb, tr)
}
"""
    )
    assert not row_local(across.entry, 0, (8,))
