"""Kernels of a native while loop split in two halves on the native pool, and the pool's worker
woken at the loop's entry (while_driver_pool.py, native_while.POOL_MIN_TRANSCENDENTALS).

Tolerances, stated:
- Native (halves, whichever thread runs them) vs the Python path: bit for bit. The kernels are
  the same code; a half computes exactly the elements of its rows, as a kernel thunk's chunks.
- Against the interpreter: tanh and exp in the kernels are within a few ulps of NumPy's, and
  the update ``tanh(x + b) / 2 + exp(-x / 2) / 4`` contracts differences once the values are
  in (0, 1) (after one trip from inputs up to ~10: exp(5) / 4 ~ 37, a few ulps of which is
  ~4e-6), so 2e-6 relative plus 1e-6 absolute per element, for every trip count tested.
Which plan ran is asserted on the planned loop (``_plan_whiles``' result).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort_cpu import compiler, native_while, thread_pool  # noqa: E402
from hlort_cpu.codegen.while_driver import KernelCall  # noqa: E402

RNG = np.random.default_rng(47)


def activation_loop(rows: int, cols: int, bias: bool):
    """``while i < n: x = tanh(x + b) * 0.5 + exp(x * -0.5) * 0.25; i += 1`` -> (i, x). With
    ``bias`` the row vector ``b`` is broadcast (a kernel over rows: extent ``rows``); without,
    ``b`` is 0 and the kernel is flat (blocks of FLAT_BLOCK elements)."""
    b = Builder(f"activation_loop_{rows}x{cols}_{bias}")
    x_shape, b_shape = shape.array("f32", [rows, cols]), shape.array("f32", [cols])
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), x_shape, b_shape)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, x, row = (bb.get_tuple_element(p, k) for k in range(4))

    def const(v):
        return bb.broadcast(bb.constant(np.float32(v)), [rows, cols], [])

    shifted = bb.add(x, bb.broadcast(row, [rows, cols], [1])) if bias else x
    x = bb.add(
        bb.multiply(bb.tanh(shifted), const(0.5)),
        bb.multiply(bb.exp(bb.multiply(x, const(-0.5))), const(0.25)),
    )
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, x, row]))
    n0, x0, b0 = b.parameter(shape.scalar("s32")), b.parameter(x_shape), b.parameter(b_shape)
    loop = b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, x0, b0]))
    return b.build(b.tuple([b.get_tuple_element(loop, k) for k in (0, 2)]))


def compile_planned(module, monkeypatch, native: bool = True):
    """The executable and the native loops planned for it (none when ``native`` is False)."""
    planned = []
    plan = compiler._plan_whiles

    def recording(*args):
        natives = plan(*args) if native else {}
        planned.extend(natives.values())
        return natives

    with monkeypatch.context() as mp:
        mp.setenv("HLORT_CACHE", "0")
        mp.setattr(compiler, "_plan_whiles", recording)
        exe = hlort.compile(module, "cpu")
    return exe, planned


def kernel_calls(native) -> list[KernelCall]:
    steps = (*native.plan.condition, *native.plan.body)
    return [s for s in steps if isinstance(s, KernelCall)]


def inputs(rows: int, cols: int, trips: int) -> list:
    x = RNG.standard_normal((rows, cols)).astype(np.float32) * 3
    x.reshape(-1)[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return [np.int32(trips), x, RNG.standard_normal(cols).astype(np.float32)]


def bits_equal(actual, expected) -> None:
    for a, e in zip(actual, expected, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), e.reshape(-1).view(np.uint8))


POOLED = {  # name: (rows, cols, bias); 2 x rows x cols transcendentals, >= 2^13
    "rows16": (16, 257, True),  # an LSTM cell's batch: halves of 8 rows
    "rows7": (7, 1200, True),  # halves of 4 and 3 rows
    "flat": (3, 5000, False),  # 15000 elements: flat blocks [0, 2) and [2, 3)
}


@pytest.mark.parametrize("layout", sorted(POOLED))
@pytest.mark.parametrize("trips", [0, 1, 40])
def test_pooled_kernel_loops_match_the_python_path(layout, trips, monkeypatch):
    """The pool is used whenever its worker is awake (the machine's load decides), so the check
    is the bits, whoever ran the halves."""
    rows, cols, bias = POOLED[layout]
    module = activation_loop(rows, cols, bias)
    monkeypatch.setattr(thread_pool, "crowded", lambda pool: False)
    exe, planned = compile_planned(module, monkeypatch)
    assert exe.raw.stats()["compiled"].get("while (native)") == 1
    assert len(planned) == 1 and planned[0].pool_slots is not None
    calls = kernel_calls(planned[0])
    assert any(c.pool is not None for c in calls), calls
    assert all(c.extent >= 2 and not c.split for c in calls if c.pool is not None)
    python, _ = compile_planned(module, monkeypatch, native=False)
    assert "while (native)" not in python.raw.stats()["compiled"]
    args = inputs(rows, cols, trips)
    native = exe(*args)
    bits_equal(native, python(*args))
    for _ in range(3):  # again, the worker now likely awake: the same bits
        bits_equal(exe(*args), native)
    ref = hlort.evaluate(module, args)
    assert int(native[0]) == trips
    np.testing.assert_allclose(np.asarray(native[1]), np.asarray(ref[1]), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize(
    "rows, cols, bias", [(1, 1 << 14, True), (1, 8192, False), (16, 128, True)], ids=str
)
def test_kernels_too_cheap_or_of_one_row_run_whole(rows, cols, bias, monkeypatch):
    """One row or one flat block (nothing to halve), or 2 x 2048 transcendentals (under the
    threshold): one call, and no pool arguments for the driver."""
    module = activation_loop(rows, cols, bias)
    exe, planned = compile_planned(module, monkeypatch)
    assert len(planned) == 1
    assert all(c.pool is None for c in kernel_calls(planned[0]))
    assert planned[0].pool_slots is None
    args = inputs(rows, cols, 5)
    python, _ = compile_planned(module, monkeypatch, native=False)
    bits_equal(exe(*args), python(*args))


def test_threshold_is_a_tuning_constant(monkeypatch):
    """Lowering POOL_MIN_TRANSCENDENTALS at run time plans the cheap kernel pooled (a new
    cache key: code_settings), and its results keep their bits."""
    module = activation_loop(16, 128, True)
    monkeypatch.setattr(native_while, "POOL_MIN_TRANSCENDENTALS", 1 << 10)
    monkeypatch.setattr(thread_pool, "crowded", lambda pool: False)
    exe, planned = compile_planned(module, monkeypatch)
    assert any(c.pool is not None for c in kernel_calls(planned[0]))
    args = inputs(16, 128, 9)
    python, _ = compile_planned(module, monkeypatch, native=False)
    bits_equal(exe(*args), python(*args))


def test_a_crowded_machine_passes_no_pool_to_the_driver(monkeypatch):
    """While other work crowds the cores the thunk hands the driver a null dispatch: every
    step runs whole on the calling thread (and the worker is not woken)."""
    if thread_pool.worker_count() < 2:
        pytest.skip("one thread: there is no pool")
    monkeypatch.setattr(thread_pool, "crowded", lambda pool: True)
    assert native_while._pool_pointers() == (0, 0)
    monkeypatch.setattr(thread_pool, "crowded", lambda pool: False)
    state, run = native_while._pool_pointers()
    assert (state != 0) == (run != 0)


def test_pooled_loops_survive_the_disk_cache(monkeypatch):
    """A cache hit replans the pooled kernel (and the wake) from the cached object's symbols."""
    from hlort_cpu import compile_cache

    monkeypatch.setattr(thread_pool, "crowded", lambda pool: False)
    module = activation_loop(5, 1700, True)  # a shape no other test compiles
    first = hlort.compile(module, "cpu")
    compile_cache.clear_memory()
    second = hlort.compile(module, "cpu")
    assert second.raw.stats()["cache_hit"] and not first.raw.stats()["cache_hit"]
    assert second.raw.stats()["compiled"] == first.raw.stats()["compiled"]
    loops = [s for s, _ in second.raw.program.schedule if hasattr(s, "pool_slots")]
    assert len(loops) == 1 and loops[0].pool_slots is not None
    args = inputs(5, 1700, 12)
    bits_equal(second(*args), first(*args))
