"""Split full reduces on the pool: the range rule (split_ranges.py) and that one thread, two
threads and any grouping of chunks into ranges give the same bits (NaN, inf, int wrap)."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_helpers import reference, same_bits

from hlort import Builder, shape
from hlort_cpu import split_ranges, thread_pool
from hlort_cpu.codegen.split_reduce import SPLIT_CHUNK
from hlort_cpu.thunks import KernelThunk


def _covers(ranges, parts):
    assert ranges[0][0] == 0 and ranges[-1][1] == parts
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(ranges[:-1], ranges[1:], strict=True))
    assert ranges[-1][0] < ranges[-1][1]


@pytest.mark.parametrize("parts", [2, 3, 7, 16, 17, 255, 256, 1000])
def test_ranges_cover_the_chunks_in_order(monkeypatch, parts):
    monkeypatch.setenv("HLORT_CPU_THREADS", "1")
    assert list(split_ranges.split_reduce_ranges(parts, SPLIT_CHUNK)) == [(0, parts)]
    monkeypatch.setenv("HLORT_CPU_THREADS", "2")
    ranges = split_ranges.split_reduce_ranges(parts, SPLIT_CHUNK)
    _covers(ranges, parts)
    per = split_ranges.RANGES_PER_WORKER
    assert 2 <= len(ranges) <= max(2, min(2 * per, parts // split_ranges.MIN_RANGE_CHUNKS))
    if parts >= 2 * per * split_ranges.MIN_RANGE_CHUNKS:
        assert len(ranges) == 2 * per  # 2^24 f32: 32 ranges of 8 chunks


def _module(op, dtype, init, n):
    b = Builder(f"full_{op}_{dtype}")
    x = b.parameter(shape.array(dtype, [n]))
    y = b.parameter(shape.array(dtype, [n]))
    k = b.constant(np.array(init, shape.array(dtype, []).dtype.numpy))
    return b.build(b.reduce(b.add(x, y), k, b.scalar_computation(op, dtype), [0]))


N = 37 * SPLIT_CHUNK + 4321  # not a multiple of the chunk: the last chunk is partial
RNG = np.random.default_rng(7)


def _floats(special: bool):
    x = RNG.standard_normal(N).astype(np.float32)
    y = RNG.standard_normal(N).astype(np.float32)
    if special:
        x[[5, N // 2]] = np.inf
        y[[9, N - 1]] = -0.0
    return x, y


CASES = {
    "f32_add": (("add", "f32", 0.0), lambda: _floats(False)),
    "f32_add_inf": (("add", "f32", 0.0), lambda: _floats(True)),
    "f32_add_nan": (
        ("add", "f32", 0.0),
        lambda: (_floats(False)[0], np.full(N, np.nan, np.float32)),
    ),
    "f32_max_nan": (("maximum", "f32", -np.inf), lambda: _floats(True)),
    "s32_add_wraps": (
        ("add", "s32", 0),
        lambda: (np.full(N, 2**30, np.int32), RNG.integers(-9, 2**30, N).astype(np.int32)),
    ),
    "u8_add_wraps": (
        ("add", "u8", 0),
        lambda: (RNG.integers(0, 256, N).astype(np.uint8), np.full(N, 255, np.uint8)),
    ),
}


def _run(module, args, threads, monkeypatch):
    import hlort

    monkeypatch.setenv("HLORT_CPU_THREADS", str(threads))
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(thread_pool, "crowded", lambda pool: False)  # the pool, even if loaded
    exe = hlort.compile(module, "cpu:0")
    (split,) = [s for s in exe.raw.program.steps if isinstance(s, KernelThunk) and s.split]
    assert len(split.ranges) == (1 if threads == 1 else 8)  # 38 chunks: 7 of 5, one of 3
    return np.asarray(exe(*args))


@pytest.mark.parametrize("name", list(CASES))
def test_one_and_two_threads_give_the_same_bits(monkeypatch, name):
    (op, dtype, init), make = CASES[name]
    module = _module(op, dtype, init, N)
    args = make()
    one = _run(module, args, 1, monkeypatch)
    two = _run(module, args, 2, monkeypatch)
    assert same_bits(one, two), (one, two)
    want = np.asarray(reference(module, *args))
    if dtype == "f32" and op == "add" and np.isfinite(want):
        # Partial sums reassociate: bound by n ulp-scaled magnitudes of the summands.
        total = float(np.abs(args[0].astype(np.float64) + args[1]).sum())
        assert abs(float(two) - float(want)) <= 2 * N * np.finfo(np.float32).eps * total
    else:  # ints wrap exactly; NaN and inf propagate; max is exact
        assert same_bits(two, want), (two, want)
