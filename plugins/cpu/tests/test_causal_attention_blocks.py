"""Causal attention on cpu after the core's row blocking (passes/causal_attention.py): the blocks
compile natively (no interpreter fallback; the row kernels, slices, tail sums and the final
concatenation are all kernels) and match the interpreter on the unblocked program, with the
edge values of the type in q, k and v (NaN, infinities, signed zeros, huge values)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import shape  # noqa: E402
from hlort.builder import Builder  # noqa: E402
from hlort.ir import DotDimensionNumbers as Dn  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402

# f32 sums reassociate (blocked dots, BLAS order): error bounded by the output's largest term
RTOL = {"f32": 2e-5, "f64": 1e-12}


def _attention(dtype: str, heads: int, seq: int, d: int, masked) -> hlort.Module:
    b = Builder("causal_attention")
    dt = shape.array(dtype).dtype
    npdt = dt.numpy
    q, k, v = (b.parameter(shape.array(dtype, (heads, seq, d))) for _ in range(3))
    full = (heads, seq, seq)
    s = b.dot_general(q, k, Dn((2,), (2,), (0,), (0,)))
    s = b.divide(s, b.broadcast(b.constant(np.array(np.sqrt(d), npdt)), full, []))
    rows = b.iota(shape.array("s32", (seq, seq)), 0)
    cols = b.iota(shape.array("s32", (seq, seq)), 1)
    pred = b.broadcast(b.compare(rows, cols, "GE"), full, (1, 2))
    x = b.select(pred, s, b.broadcast(b.constant(np.array(masked, npdt)), full, []))
    mx = b.reduce(x, b.constant(np.array(-np.inf, npdt)), b.scalar_computation("maximum", dt), [2])
    e = b.exponential(b.subtract(x, b.broadcast(mx, full, (0, 1))))
    total = b.reduce(e, b.constant(np.array(0, npdt)), b.scalar_computation("add", dt), [2])
    p = b.divide(e, b.broadcast(total, full, (0, 1)))
    return b.build(b.dot_general(p, v, Dn((2,), (1,), (0,), (0,))))


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("masked", [-np.inf, "lowest"])
def test_blocked_attention_compiles_and_matches(dtype, masked):
    npdt = shape.array(dtype).dtype.numpy
    fill = np.finfo(npdt).min if masked == "lowest" else masked
    module = _attention(dtype, 2, 256, 8, fill)
    exe = hlort.compile(module, "cpu:0")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    dots = [i for i in exe.raw.module.entry.instructions if i.opcode is Opcode.DOT]
    assert len(dots) == 8, "4 row blocks, two dots each"
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        args = [mixed(p.shape.dtype, p.shape.dims, rng) for p in module.entry.parameters]
        if seed:  # finite inputs of moderate size: every output element is compared
            args = [rng.standard_normal(a.shape).astype(npdt) for a in args]
        got = np.asarray(exe(*args), np.float64)
        want = np.asarray(hlort.evaluate(module, args), np.float64)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        inf = np.isinf(want)
        np.testing.assert_array_equal(got[inf], want[inf])
        finite = np.isfinite(want)
        scale = float(np.max(np.abs(want[finite]), initial=1.0))
        assert np.max(np.abs(got[finite] - want[finite]), initial=0.0) <= RTOL[dtype] * scale
