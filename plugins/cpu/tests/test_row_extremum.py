"""Row max/min folds (row_extremum.py: maxnum plus a NaN flag and a zero-sign fold) against the
interpreter's IEEE maximum/minimum, bit for bit (NaN equal to NaN, -0 distinct from +0): rows of
signed zeros only, zeros among negatives (or positives, for minimum), NaNs of either sign at the
front, in the middle and in the vector tail, infinities, all -inf, random values; inits that are
-inf, +-0, NaN or a parameter; row lengths around the vector and interleave widths, empty rows
and no rows; every float dtype (f16/bf16 fold in f32 and round once)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from codegen_helpers import same_bits  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort_cpu import compile_cache  # noqa: E402

RAW = {"debug": {"disabled_passes": ["simplify"]}}


def _module(dt: str, dims: tuple[int, int], op: str, init: float | None):
    """(reduce op of the rows, x - broadcast(that)): a row fusion with a row and an element
    output; ``init`` None: the init is a scalar parameter."""
    b = Builder(f"row_{op}")
    x = b.parameter(shape.array(dt, list(dims)))
    t = x.shape.dtype
    init_v = (
        b.parameter(shape.array(dt, [])) if init is None else b.constant(np.array(init, t.numpy))
    )
    r = b.reduce(x, init_v, b.scalar_computation(op, t), [1])
    shifted = b.subtract(x, b.broadcast(r, list(dims), [0]))
    return b.build(b.tuple([r, shifted]))


def _rows(dt, n: int, op: str, rng) -> np.ndarray:
    """Rows that exercise every rule of the fold (each of length ``n``)."""
    t = dtypes.from_hlo_name(dt).numpy
    sign = -1 if op == "maximum" else 1  # the side where zeros decide the result
    rows = []
    rows.append(np.full(n, -0.0))
    rows.append(np.where(rng.random(n) < 0.5, -0.0, 0.0))
    rows.append(np.full(n, 0.0))
    z = sign * rng.uniform(1, 100, n)
    z[rng.integers(n)] = -0.0
    rows.append(z)
    z = sign * rng.uniform(1, 100, n)
    z[rng.integers(n)] = 0.0
    rows.append(z)
    for where in (0, n // 2, n - 1):
        for nan in (np.nan, -np.nan):
            v = rng.standard_normal(n)
            v[where] = nan
            rows.append(v)
    rows.append(np.full(n, -np.inf))
    rows.append(np.full(n, np.inf))
    v = rng.standard_normal(n)
    v[rng.integers(n)] = np.inf
    v[rng.integers(n)] = -np.inf
    rows.append(v)
    rows += [rng.standard_normal(n) * 10 for _ in range(3)]
    with np.errstate(over="ignore"):
        return np.array(rows).astype(t)


LENGTHS = [1, 7, 16, 17, 63, 64, 255, 256, 257, 513, 1000]


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16"])
@pytest.mark.parametrize("init", [-np.inf, np.inf, 0.0, -0.0, np.nan, None])
def test_row_extremum_matches_interpreter(op, dt, init):
    rng = np.random.default_rng(11)
    t = dtypes.from_hlo_name(dt).numpy
    for n in LENGTHS:
        x = _rows(dt, n, op, rng)
        module = _module(dt, x.shape, op, init)
        args = [x]
        if init is None:
            args += [np.array(-0.0 if op == "maximum" else 0.0, t)]
        exe = hlort.compile(module, "cpu:0", options=RAW)
        assert exe.raw.stats()["fallback_count"] == 0
        got = [np.asarray(g) for g in exe(*args)]
        want = [np.asarray(w) for w in hlort.evaluate(module, args)]
        for g, w in zip(got, want, strict=True):
            assert same_bits(g, w), (n, np.nonzero(~((g == w) | (np.isnan(g) & np.isnan(w)))))


@pytest.mark.parametrize("dims", [(0, 16), (4, 0), (0, 0)])
@pytest.mark.parametrize("init", [-np.inf, -0.0, np.nan])
def test_empty_rows_give_the_init(dims, init):
    module = _module("f32", dims, "maximum", init)
    x = np.zeros(dims, np.float32)
    exe = hlort.compile(module, "cpu:0", options=RAW)
    got = [np.asarray(g) for g in exe(x)]
    want = [np.asarray(w) for w in hlort.evaluate(module, [x])]
    for g, w in zip(got, want, strict=True):
        assert same_bits(g, w)


def test_the_row_kernel_folds_by_maxnum(tmp_path, monkeypatch):
    """The fold is llvm.maxnum (one vmaxps), not llvm.maximum (six vector operations)."""
    key = compile_cache.cache_key
    monkeypatch.setattr(compile_cache, "cache_key", lambda *a: key(*a) + "-ir-extremum")
    module = _module("f32", (4, 512), "maximum", -np.inf)
    hlort.compile(module, "cpu:0", options={**RAW, "dump_dir": str(tmp_path)})
    (ll,) = tmp_path.glob("*.cpu.kernels.ll")
    text = ll.read_text()
    assert "call nnan nsz float @llvm.maxnum.f32" in text.replace('"', "")
    assert "llvm.maximum" not in text
