"""Column-form reductions with an epilogue (what multi-output fusion merges after a reduction
over leading or middle dimensions: ``sum / n``, ``exp(max)``, the reduction as a second output)
compile as one kernel and match the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

RNG = np.random.default_rng(21)
CASES = [((64, 128), [0]), ((8, 16, 32), [1]), ((4, 5, 6), [0, 1]), ((0, 7), [0])]


def _values(dims, dtype):
    dt = shape.array(dtype, [1]).dtype
    if dt.is_integer:
        return RNG.integers(-1000, 1000, dims).astype(dt.numpy)
    x = RNG.standard_normal(dims)
    if x.size > 4:
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return x.astype(dt.numpy)


def _check(module, args, exact: bool):
    exe = hlort.compile(module, "cpu:0")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    got, want = exe(*args), hlort.evaluate(module, args)
    if not isinstance(got, (list, tuple)):
        got, want = [got], [want]
    for g, w in zip(got, want, strict=True):
        if exact:
            np.testing.assert_array_equal(g, w)
        else:  # sums may round in another order than the interpreter's
            np.testing.assert_allclose(
                np.float64(g),
                np.float64(w),
                rtol=2e-2 if g.dtype.itemsize == 2 else 1e-5,
                atol=1e-5,
            )


@pytest.mark.parametrize("dims,reduced", CASES, ids=[f"{d}-{r}" for d, r in CASES])
@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "s32"])
def test_sum_then_elementwise(dims, reduced, dtype):
    b = Builder("sum_epilogue")
    x = b.parameter(shape.array(dtype, list(dims)))
    dt = x.shape.dtype
    s = b.reduce(x, b.constant(np.zeros((), dt.numpy)), b.scalar_computation("add", dtype), reduced)
    two = b.broadcast(b.constant(np.array(2, dt.numpy)), list(s.shape.dims), [])
    out = b.multiply(s, s) if dt.is_integer else b.exp(b.divide(s, two))
    _check(b.build(out), [_values(dims, dtype)], exact=dt.is_integer)


@pytest.mark.parametrize("dims,reduced", CASES[:3], ids=[f"{d}-{r}" for d, r in CASES[:3]])
def test_max_as_an_output_and_through_an_epilogue(dims, reduced):
    b = Builder("max_epilogue")
    x = b.parameter(shape.array("f32", list(dims)))
    m = b.reduce(
        x, b.constant(np.float32(-np.inf)), b.scalar_computation("maximum", "f32"), reduced
    )
    p = b.parameter(shape.array("f32", list(m.shape.dims)))
    module = b.build(b.tuple([m, b.add(m, p)]))
    _check(module, [_values(dims, "f32"), _values(m.shape.dims, "f32")], exact=True)


def test_two_reductions_one_epilogue():
    """E[x^2] - E[x]^2 over the batch axis: both sums and the epilogue in one kernel."""
    b = Builder("variance")
    x = b.parameter(shape.array("f32", [256, 48]))
    zero, add = b.constant(np.float32(0)), b.scalar_computation("add", "f32")
    s1 = b.reduce(x, zero, add, [0])
    s2 = b.reduce(b.multiply(x, x), zero, add, [0])
    n = b.broadcast(b.constant(np.float32(256)), [48], [])
    mean = b.divide(s1, n)
    module = b.build(b.subtract(b.divide(s2, n), b.multiply(mean, mean)))
    exe = hlort.compile(module, "cpu:0")
    assert exe.raw.stats()["compiled"] == {"fusion(kInput)": 1}
    _check(module, [RNG.standard_normal((256, 48)).astype(np.float32)], exact=False)


def test_reductions_come_out_in_the_root_order():
    """A fusion (as XLA dumps it) whose root lists its reductions in another order than they
    are defined, with different element types."""
    from hlort.plugin.options import CompileOptions, DebugOptions

    text = """HloModule m
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] add(a, b)
}
mx {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ROOT r = s32[] maximum(a, b)
}
fc {
  x = f32[8,4] parameter(0)
  y = s32[8,4] parameter(1)
  z = f32[] constant(0)
  low = s32[] constant(-100)
  r1 = f32[4] reduce(x, z), dimensions={0}, to_apply=add
  r2 = s32[4] reduce(y, low), dimensions={0}, to_apply=mx
  ROOT t = (s32[4], f32[4]) tuple(r2, r1)
}
ENTRY e {
  x = f32[8,4] parameter(0)
  y = s32[8,4] parameter(1)
  ROOT f = (s32[4], f32[4]) fusion(x, y), kind=kInput, calls=fc
}
"""
    options = CompileOptions(debug=DebugOptions(run_core_passes=False))
    exe = hlort.compile(text, "cpu:0", options=options)
    assert exe.raw.stats()["fallback_count"] == 0
    x = np.arange(32, dtype=np.float32).reshape(8, 4)
    y = (np.arange(32, dtype=np.int32).reshape(8, 4) * 3) % 17
    got = exe(x, y)
    assert got[0].dtype == np.int32 and got[1].dtype == np.float32
    np.testing.assert_array_equal(got[0], y.max(axis=0))
    np.testing.assert_array_equal(got[1], x.sum(axis=0))
