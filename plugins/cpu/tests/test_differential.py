"""Hypothesis-generated fused programs on the cpu backend vs the interpreter.

Integer and data-movement programs must match bit for bit; float programs within a few ulp
(the emitted exp/tanh are within 2-3 ulp, see test_transcendental_ulp.py)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

FLOAT_UNARY = ["negate", "abs", "exp", "tanh", "floor", "sqrt", "logistic"]
FLOAT_BINARY = ["add", "subtract", "multiply", "maximum", "minimum", "divide"]
INT_BINARY = [
    "add",
    "subtract",
    "multiply",
    "and_",
    "or_",
    "xor",
    "maximum",
    "divide",
    "remainder",
    "shift_left",
    "shift_right_arithmetic",
]


@st.composite
def programs(draw):
    is_int = draw(st.booleans())
    dtype = "s32" if is_int else "f32"
    dims = (draw(st.integers(1, 5)), draw(st.integers(1, 6)))
    b = Builder("prog")
    params = [b.parameter(shape.array(dtype, dims)) for _ in range(2)]
    row = b.parameter(shape.array(dtype, [dims[1]]))
    values = params + [b.broadcast(row, dims, [1])]
    for _ in range(draw(st.integers(1, 6))):
        if not is_int and draw(st.booleans()):
            op = draw(st.sampled_from(FLOAT_UNARY))
            values.append(getattr(b, op)(draw(st.sampled_from(values))))
        else:
            op = draw(st.sampled_from(INT_BINARY if is_int else FLOAT_BINARY))
            values.append(
                getattr(b, op)(draw(st.sampled_from(values)), draw(st.sampled_from(values)))
            )
    last = values[-1]
    if draw(st.booleans()):
        last = b.transpose(last, [1, 0])
    elif draw(st.booleans()):
        zero = b.constant(np.zeros((), shape.scalar(dtype).dtype.numpy))
        last = b.reduce(last, zero, b.scalar_computation("add", dtype), [1])
    module = b.build(last)
    seed = draw(st.integers(0, 2**16))
    return module, dtype, seed


@settings(max_examples=25, deadline=None)
@given(programs())
def test_cpu_matches_interpreter(program):
    module, dtype, seed = program
    rng = np.random.default_rng(seed)
    args = []
    for p in module.entry.parameters:
        if dtype == "s32":
            args.append(rng.integers(-40, 40, p.shape.dims).astype(np.int32))
        else:
            args.append((rng.standard_normal(p.shape.dims) * 2).astype(np.float32))
    want = hlort.evaluate(module, args)
    got = hlort.compile(module, "cpu:0")(*args)
    if dtype == "s32":
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
