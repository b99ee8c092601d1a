"""A transposed dot result (JAX's weight gradients: ``transpose(dot(x, dy))``) compiles to one
dot with swapped operands and no transpose kernel, and matches the interpreter within the dot
tolerance of contraction_tolerance.py (stated against ``dot(b, a)``, which the interpreter
evaluates bit for bit like the original: tests/passes/test_transpose_of_dot.py). Edge values
(NaN, infinities) are in the inputs; sizes cover BLAS-sized, size-1 and empty dimensions."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from contraction_tolerance import assert_matches_reference  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402

CASES = [  # lhs dims, rhs dims, dimension numbers, folding permutation
    ((64, 48), (64, 80), Dn((0,), (0,)), (1, 0)),
    ((3, 33, 17), (3, 17, 9), Dn((2,), (1,), (0,), (0,)), (0, 2, 1)),
    ((1, 7), (7, 5), Dn((1,), (0,)), (1, 0)),
    ((0, 7), (7, 5), Dn((1,), (0,)), (1, 0)),
]


def _swap(dn: Dn) -> Dn:
    return Dn(
        dn.rhs_contracting_dims, dn.lhs_contracting_dims, dn.rhs_batch_dims, dn.lhs_batch_dims
    )


def _module(dtype, lhs_dims, rhs_dims, dn, perm=None):
    b = Builder("dot")
    x = b.parameter(shape.array(dtype, lhs_dims))
    y = b.parameter(shape.array(dtype, rhs_dims))
    dot = b.dot_general(x, y, dn)
    return b.build(dot if perm is None else b.transpose(dot, perm))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "c64", "s32"])
def test_transposed_dot_is_one_dot(case, dtype):
    lhs_dims, rhs_dims, dn, perm = case
    rng = np.random.default_rng(3)
    dt = dtypes.from_hlo_name(dtype)
    a, b = mixed(dt, lhs_dims, rng), mixed(dt, rhs_dims, rng)
    exe = hlort.compile(_module(dtype, lhs_dims, rhs_dims, dn, perm), "cpu")
    got = np.asarray(exe(a, b))
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    k = math.prod(lhs_dims[d] for d in dn.lhs_contracting_dims)
    if k > 1:  # one dot thunk, no transpose kernel
        assert list(stats["compiled"].values()) == [1], stats
        assert all(label.startswith("dot") for label in stats["compiled"]), stats
    swapped = _module(dtype, rhs_dims, lhs_dims, _swap(dn))
    assert_matches_reference(swapped, [b, a], got, k)


OPERAND_CASES = [  # x dims, permutation, other operand dims, dimension numbers, side
    ((48, 64), (1, 0), (48, 80), Dn((1,), (0,)), 0),  # x^T @ y
    ((80, 48), (1, 0), (33, 48), Dn((1,), (0,)), 1),  # y @ w^T
    ((3, 17, 33), (0, 2, 1), (3, 17, 9), Dn((2,), (1,), (0,), (0,)), 0),
    ((0, 7), (1, 0), (0, 5), Dn((1,), (0,)), 0),
]


@pytest.mark.parametrize("case", OPERAND_CASES)
@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "c64", "s32"])
def test_transposed_operand_is_read_by_the_dot(case, dtype):
    x_dims, perm, y_dims, dn, side = case
    rng = np.random.default_rng(4)
    dt = dtypes.from_hlo_name(dtype)
    x, y = mixed(dt, x_dims, rng), mixed(dt, y_dims, rng)
    b = Builder("dot_of_transpose")
    px, py = b.parameter(shape.array(dtype, x_dims)), b.parameter(shape.array(dtype, y_dims))
    t = b.transpose(px, perm)
    module = b.build(b.dot_general(t, py, dn) if side == 0 else b.dot_general(py, t, dn))
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(x, y))
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert list(stats["compiled"].values()) == [1], stats  # the dot alone, no transpose kernel
    k = math.prod(
        y_dims[d] for d in (dn.rhs_contracting_dims if side == 0 else dn.lhs_contracting_dims)
    )
    assert_matches_reference(module, [x, y], got, k)
