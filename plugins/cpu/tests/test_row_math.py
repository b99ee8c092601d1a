"""The row kernel's shorter softmax math gives the bits of the code it replaces.

- float_math.exp_f32_nonpositive against exp_f32 on every f32 bit pattern <= 0 and every NaN
  (2**31 + 2**23 of them, a few seconds) with lrint, every 7th with roundeven (other targets');
- float_math.quotient_by_reciprocal against the division on 2**23 random pairs in the range
  row_quotient.py admits (numerators 0 or >= 2**-100, quotients >= 2**-100, s < 2**100), with
  significands near 1, near all ones and random (10**9 more, by the same kernel, gave no
  difference either: docs/cpu-plugin.md), and what goes wrong outside it (the check matters);
- softmax row kernels (of ``a - max(a)`` and of plain exp, whose sum may overflow) with the two
  paths on and off, 1 and 2 threads: the same bits, and the interpreter's values, on rows of
  random values with NaN, +-inf, -0.0 and subnormals, rows of all -inf, masked rows, rows whose
  exps underflow to subnormals, and rows whose sum overflows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from row_math_kernels import binary_arrays, unary_sweep  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.codegen.llvm.float_math import (  # noqa: E402
    exp_f32,
    exp_f32_nonpositive,
    quotient_by_reciprocal,
)
from hlort.codegen.llvm.llvm_types import F32  # noqa: E402
from hlort.codegen.llvm.row_fusion import nonpositive_argument, plan_row_fusion  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402
from hlort_cpu.codegen import row_loops, row_quotient  # noqa: E402
from hlort_cpu.codegen.cpu_target import CPU_TARGET  # noqa: E402
from hlort_cpu.codegen.row_quotient import sum_quotients  # noqa: E402

RAW = {"debug": {"disabled_passes": ["simplify"]}}


@pytest.mark.parametrize("lrint", [True, False])
def test_nonpositive_exp_has_exp_f32_bits_on_every_input_it_takes(lrint):
    """x86's lrint form (the cpu's) on every pattern; the roundeven + fptosi form (NaN kept by
    keep_nan: other targets) on every 7th."""
    math = dataclasses.replace(CPU_TARGET.math, lrint_instruction=lrint)
    differs = unary_sweep(exp_f32, exp_f32_nonpositive, dataclasses.replace(CPU_TARGET, math=math))
    step = 1 if lrint else 7
    assert differs(0, (1 << 31) // step, -(1 << 31), step) == 0  # -0.0 .. -inf, negative NaNs
    assert differs(0x7F800001, ((1 << 23) - 1) // step, 0, step) == 0  # the positive NaNs
    assert differs(0, 1, 0) == 0  # +0.0
    # the sweep sees a difference when there is one: x from 200 up (not this path's: no clamp)
    assert differs(0x43480000, 1 << 16, 0) > 0


def _by_reciprocal(ctx, a, s):
    return quotient_by_reciprocal(ctx, a, s, ctx.b.fdiv(ctx.f(F32, 1.0), s))


def _pairs(rng, n, a_mode, s_mode, low_exponent=27):
    def significand(mode):
        if mode == "ones":
            return (1 << 23) - 1 - rng.integers(0, 64, n, dtype=np.uint32)
        if mode == "one":
            return rng.integers(0, 64, n, dtype=np.uint32)
        return rng.integers(0, 1 << 23, n, dtype=np.uint32)

    es = rng.integers(127 - 26, 127 + 40, n)
    ea = np.clip(es + rng.integers(-100, 2, n), low_exponent, 254)
    a = ((ea.astype(np.uint32) << 23) | significand(a_mode)).view(np.float32)
    s = ((es.astype(np.uint32) << 23) | significand(s_mode)).view(np.float32)
    return np.ascontiguousarray(a), np.ascontiguousarray(s)


def test_quotient_by_reciprocal_is_the_division_where_row_quotient_takes_it():
    differs = binary_arrays(lambda ctx, a, s: ctx.b.fdiv(a, s), _by_reciprocal)
    rng = np.random.default_rng(5)
    modes = ("random", "ones", "one")
    for a_mode in modes:
        for s_mode in modes:
            a, s = _pairs(rng, 1 << 20, a_mode, s_mode)
            assert differs(a.ctypes.data, s.ctypes.data, a.size) == 0, (a_mode, s_mode)
    # numerators near the bottom of the normal range: the residual is not exact, bits differ
    a, s = _pairs(rng, 1 << 20, "random", "random", low_exponent=1)
    assert differs(a.ctypes.data, s.ctypes.data, a.size) > 0


def _reduce(b, x, op, init):
    return b.reduce(x, b.constant(np.float32(init)), b.scalar_computation(op, x.shape.dtype), [1])


def softmax(rows, cols, shifted=True):
    b = Builder("softmax")
    x = b.parameter(shape.array("f32", [rows, cols]))
    if shifted:
        m = _reduce(b, x, "maximum", -np.inf)
        x = b.subtract(x, b.broadcast(m, [rows, cols], [0]))
    e = b.exp(x)
    return b.build(b.divide(e, b.broadcast(_reduce(b, e, "add", 0.0), [rows, cols], [0])))


def _inputs(rows, cols, rng):
    x = rng.standard_normal((rows, cols)).astype(np.float32) * 4
    x[0] = mixed(hlort.dtypes.F32, (cols,), rng)  # NaN, +-inf, -0.0, subnormals ...
    x[1] = -np.inf  # all -inf: NaN
    x[2, 1:] = -np.inf  # one finite score: 1 and exact zeros (slow path)
    x[3] = np.linspace(-100, 0, cols, dtype=np.float32)  # exps down to subnormals
    x[4] = np.linspace(80, 89, cols, dtype=np.float32)  # plain exp: the sum overflows
    x[5] = -3.4028235e38  # finfo.min, as masked scores
    x[5, :3] = 1.5
    x[6, ::2] = 0.0
    x[6, 1::2] = -0.0
    return x


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shifted", [True, False])
@pytest.mark.parametrize("rows,cols", [(40, 512), (9, 37)])
def test_softmax_paths_give_the_bits_of_exp_and_division(rows, cols, shifted, threads, monkeypatch):
    monkeypatch.setenv("HLORT_CPU_THREADS", str(threads))
    module = softmax(rows, cols, shifted)
    x = _inputs(rows, cols, np.random.default_rng(rows + cols))
    monkeypatch.setattr(row_loops, "SHIFT_EXP", False)
    monkeypatch.setattr(row_quotient, "BY_RECIPROCAL", False)
    want = np.asarray(hlort.compile(module, "cpu:0", options=RAW)(x))
    monkeypatch.setattr(row_loops, "SHIFT_EXP", True)
    monkeypatch.setattr(row_quotient, "BY_RECIPROCAL", True)
    got = np.asarray(hlort.compile(module, "cpu:0", options=RAW)(x))
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    ref = np.asarray(hlort.evaluate(module, [x]), np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-30, equal_nan=True)


def _fusion(module):
    (comp,) = [c for c in module.computations if plan_row_fusion(c) is not None]
    return comp, plan_row_fusion(comp)


def test_softmax_takes_both_paths_and_plain_exp_only_the_reciprocal():
    comp, plan = _fusion(softmax(4, 64))
    exps = [i for i in comp.instructions if i.opcode.value == "exponential"]
    assert [nonpositive_argument(e.operands[0]) for e in exps] == [True]
    assert len(sum_quotients(plan)) == 1
    comp, plan = _fusion(softmax(4, 64, shifted=False))
    exps = [i for i in comp.instructions if i.opcode.value == "exponential"]
    assert [nonpositive_argument(e.operands[0]) for e in exps] == [False]
    assert len(sum_quotients(plan)) == 1


def test_other_divides_and_shifts_keep_the_general_code():
    """x / sum(x) of a non-exp, exp(x - max(y)) of another y, exp(max - x): not taken."""
    b = Builder("other")
    x = b.parameter(shape.array("f32", [4, 64]))
    y = b.parameter(shape.array("f32", [4, 64]))
    m = b.broadcast(_reduce(b, y, "maximum", -np.inf), [4, 64], [0])
    e1 = b.exp(b.subtract(x, m))
    e2 = b.exp(b.subtract(m, x))
    q = b.divide(x, b.broadcast(_reduce(b, x, "add", 0.0), [4, 64], [0]))
    module = b.build(b.tuple([e1, e2, q]))
    comp, plan = _fusion(module)
    exps = [i for i in comp.instructions if i.opcode.value == "exponential"]
    assert [nonpositive_argument(e.operands[0]) for e in exps] == [False, False]
    assert sum_quotients(plan) == {}
