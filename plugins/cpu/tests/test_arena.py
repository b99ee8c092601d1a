"""The program arena: temporaries at buffer assignment's offsets, reused across calls, never
handed to the caller, one block per concurrent call."""

from __future__ import annotations

import threading

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

RNG = np.random.default_rng(11)


def _two_layers(n: int = 64):
    """exp -> dot -> relu(+bias) -> dot -> tanh: the kernels' results between the dots are
    temporaries; the second can take the first's offset (it is dead by then)."""
    b = Builder("two_layers")
    x = b.parameter(shape.array("f32", [n, n]))
    w = b.parameter(shape.array("f32", [n, n]))
    bias = b.parameter(shape.array("f32", [n]))
    h = b.dot(b.exp(x), w)
    zero = b.broadcast(b.constant(np.float32(0)), [n, n], [])
    r = b.maximum(b.add(h, b.broadcast(bias, [n, n], [1])), zero)
    module = b.build(b.tanh(b.dot(r, w)))
    args = [
        RNG.standard_normal((n, n)).astype(np.float32) * 0.1,
        RNG.standard_normal((n, n)).astype(np.float32) * 0.1,
        RNG.standard_normal(n).astype(np.float32),
    ]
    return module, args


def _program(exe):
    return exe.raw.program


def test_temporaries_share_one_block_and_results_match():
    module, args = _two_layers()
    exe = hlort.compile(module, "cpu:0")
    arena = _program(exe).arena
    assert arena is not None and len(arena.placements) == 2
    assert arena.size == 64 * 64 * 4  # the two temporaries are never live together
    assert len({offset for *_, offset in arena.placements}) == 1
    want = hlort.evaluate(module, args)
    first = exe(*args)
    second = exe(*args)
    np.testing.assert_allclose(first, want, rtol=2e-5, atol=2e-6)
    np.testing.assert_array_equal(first, second)
    assert not np.may_share_memory(first, second)  # outputs are the caller's, never the arena's


def test_compiled_memory_stats_report_the_arena():
    module, _ = _two_layers()
    exe = hlort.compile(module, "cpu:0")
    stats = exe.compiled_memory_stats()
    assert stats.temp_size_in_bytes == _program(exe).arena.size
    assert stats.argument_size_in_bytes == (64 * 64 * 2 + 64) * 4
    assert stats.output_size_in_bytes == 64 * 64 * 4
    assert stats.generated_code_size_in_bytes > 0


def test_concurrent_calls_each_get_a_block():
    module, _ = _two_layers()
    exe = hlort.compile(module, "cpu:0")
    inputs = [_two_layers()[1] for _ in range(4)]
    wants = [exe(*a) for a in inputs]
    failures = []
    barrier = threading.Barrier(4)

    def worker(k):
        try:
            barrier.wait(10)
            for _ in range(20):
                np.testing.assert_array_equal(exe(*inputs[k]), wants[k])
        except Exception as err:  # reported below
            failures.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[0]


def test_values_a_non_kernel_step_reads_stay_out_of_the_arena():
    """An identity custom call passes its input through: that input cannot sit in the arena,
    where a later temporary would overwrite it while the output still views it."""
    n = 64
    b = Builder("aliasing")
    x = b.parameter(shape.array("f32", [n, n]))
    w = b.parameter(shape.array("f32", [n, n]))
    e = b.exp(x)
    kept = b.custom_call("Sharding", [e], shape.array("f32", [n, n]))
    t = b.dot(b.sine(b.dot(e, w)), w)  # temporaries after e's last read
    module = b.build(b.tuple([kept, b.cosine(t)]))
    args = [
        RNG.standard_normal((n, n)).astype(np.float32) * 0.1,
        RNG.standard_normal((n, n)).astype(np.float32) * 0.1,
    ]
    exe = hlort.compile(module, "cpu:0")
    arena = _program(exe).arena
    assert arena is None or len(arena.placements) == 1  # sine's result only, not exp's
    want = hlort.evaluate(module, args)
    for _ in range(2):
        got = exe(*args)
        np.testing.assert_allclose(got[0], want[0], rtol=2e-6)
        np.testing.assert_allclose(got[1], want[1], rtol=2e-5, atol=2e-6)


def test_a_chain_of_kernels_needs_two_blocks_not_seven():
    """Each intermediate dies once its consumer ran, so a later step takes its offset: the
    arena holds two values (a value and the one being computed from it), one pooled block."""
    from hlort_cpu.host_pool import host_pool

    n = 70_001
    b = Builder("chain")
    v = b.parameter(shape.array("f32", [n]))
    for _ in range(4):
        v = b.reverse(b.sort(v, b.comparator(["f32"]), 0), [0])
    exe = hlort.compile(b.build(v), "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    arena = _program(exe).arena
    block = -(-n * 4 // 64) * 64
    assert len(arena.placements) == 7 and arena.size == 2 * block
    x = RNG.standard_normal(n).astype(np.float32)
    exe(x)
    pool = host_pool()
    hits, misses = pool.hits, pool.misses
    np.testing.assert_array_equal(exe(x), np.sort(x)[::-1])
    assert pool.hits - hits == 2 and pool.misses == misses  # the output and the arena block


def test_small_blocks_are_kept_large_ones_come_from_the_pool():
    module, _ = _two_layers()
    arena = _program(hlort.compile(module, "cpu:0")).arena
    first = arena.take()
    second = arena.take()  # a concurrent call: another block
    assert first[0][1].ctypes.data != second[0][1].ctypes.data
    arena.give(first)
    arena.give(second)
    assert arena.take() is second and arena.take() is first  # no allocation for kept blocks
    for _ in range(10):
        arena.give(arena._views(arena._new_block()))
    assert len(arena._idle) <= 4
