"""Column reductions over few trailing kept elements, accumulated in registers across the rows
(column_reduce.py, ``REGISTER_ACCUMULATORS``): BatchNorm statistics over channels-last
activations, bias gradients of narrow layers. Against the interpreter: bit for bit where the
order cannot matter (integers, max, min), else within the sum tolerance of
test_column_reduce.py; NaN, inf and -0.0 in the inputs; empty and size-1 dimensions; f32, f64,
f16, bf16 (f32 accumulators in scratch, rounded once) and s32; with and without an epilogue;
that the register form is the one compiled, and that wider rows keep the memory form."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from test_column_reduce import _check, _values  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort_cpu.codegen.column_reduce import REGISTER_ACCUMULATORS  # noqa: E402

SHAPES = [
    ((512, 16), [0]),  # BatchNorm-like: 16 channels
    ((4, 8, 8, 3), [0, 1, 2]),
    ((7, 4, 8), [0]),  # two kept dims, 32 accumulators
    ((1, 5), [0]),
    ((9, 1), [0]),
    ((0, 6), [0]),  # no rows: the init values
]
IDS = [f"{d}-{r}" for d, r in SHAPES]


def _ir(module) -> str | None:
    exe = hlort.compile(module, "cpu:0")
    return exe.raw.program.ir_text


def _sum_module(dims, reduced, dtype, epilogue: bool):
    b = Builder("colsum")
    x = b.parameter(shape.array(dtype, list(dims)))
    dt = x.shape.dtype
    s = b.reduce(x, b.constant(np.zeros((), dt.numpy)), b.scalar_computation("add", dtype), reduced)
    if not epilogue:
        return b.build(s)
    n = b.broadcast(b.constant(np.array(3, dt.numpy)), list(s.shape.dims), [])
    return b.build(b.multiply(s, n) if dt.is_integer else b.divide(s, n))


@pytest.mark.parametrize("dims,reduced", SHAPES, ids=IDS)
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "s32"])
@pytest.mark.parametrize("epilogue", [False, True])
def test_sums_match_the_interpreter(dims, reduced, dtype, epilogue):
    module = _sum_module(dims, reduced, dtype, epilogue)
    _check(module, [_values(dims, dtype)], exact=dtype == "s32")


@pytest.mark.parametrize("dims,reduced", SHAPES[:4], ids=IDS[:4])
@pytest.mark.parametrize("op,init", [("maximum", -np.inf), ("minimum", np.inf), ("multiply", 1)])
def test_other_reducers_bit_for_bit(dims, reduced, op, init):
    b = Builder("colred")
    x = b.parameter(shape.array("f32", list(dims)))
    r = b.reduce(x, b.constant(np.float32(init)), b.scalar_computation(op, "f32"), reduced)
    values = _values(dims, "f32")
    if op == "multiply":  # keep products finite and order-insensitive: powers of two
        values = np.where(np.isfinite(values), np.sign(values) * 2.0 ** np.round(values), values)
        values = values.astype(np.float32)
    _check(b.build(r), [values], exact=op != "multiply")


def test_nan_inf_and_negative_zero_columns():
    x = np.random.default_rng(4).standard_normal((64, 16)).astype(np.float32)
    x[:, 0] = -0.0  # all -0: the sum from +0 is +0
    x[3, 1] = np.nan
    x[5, 2], x[9, 2] = np.inf, -np.inf  # inf - inf: NaN
    x[7, 3] = np.inf
    module = _sum_module((64, 16), [0], "f32", False)
    exe = hlort.compile(module, "cpu:0")
    got = np.asarray(exe(x))
    want = np.asarray(hlort.evaluate(module, [x]))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert got[0] == 0 and not np.signbit(got[0])
    assert np.isnan(got[1]) and np.isnan(got[2]) and got[3] == np.inf
    np.testing.assert_allclose(got[4:], want[4:], rtol=1e-5, atol=1e-5)


def test_register_form_is_compiled_only_for_few_accumulators(monkeypatch):
    monkeypatch.setenv("HLORT_CACHE", "0")  # compiled here, so the IR text is there to read
    few = _ir(_sum_module((333, 16), [0], "f32", True))
    wide = _ir(_sum_module((333, REGISTER_ACCUMULATORS + 1), [0], "f32", True))
    assert few is not None and wide is not None
    assert "rows.body" in few and "col.body" not in few
    assert "col" in wide and "rows.body" not in wide
