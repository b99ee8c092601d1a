"""Dots the DotThunk runs as dot products along k (narrow_dot.py) against the interpreter.

Tolerance, stated (contraction_tolerance.assert_matches_reference): ``2 (K + 2) eps sum |a b|
+ eps |ref|`` per element, NaN where the reference has NaN, equal infinities. Inputs hold NaN,
+-inf, -0.0 and subnormals among normal values, or only normal values (not values near the
overflow threshold: an fma does not round a product to infinity on its own, as with BLAS's fma
kernels). Shapes: the MLP logits that motivated the kernel at full size, and small ones (the
size rule lowered) with row tails (m not a multiple of the register block), k tails (k not a
multiple of the vector), k of exactly one vector, 2 and 16 columns, a transposed rhs, with one
thread and with the rows split over two. Each case checks which path the dot took (the stats
label); the layouts the kernel does not take are checked to stay on their paths.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from dot_run import run_dot  # noqa: E402

from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort_cpu import narrow_dot  # noqa: E402

MATMUL = Dn((1,), (0,))
FULL = ((256, 1024), (1024, 10), MATMUL)  # an MLP's logits: 2.6M products
NARROW = [  # taken with the size rule lowered
    ((37, 100), (100, 3), MATMUL),  # row tail and k tail
    ((8, 16), (16, 16), MATMUL),  # k one vector, 16 columns
    ((5, 40), (40, 2), MATMUL),  # 2 columns: 4-row blocks, a row tail
    ((64, 40), (10, 40), Dn((1,), (1,))),  # rhs transposed
    ((3, 7, 40), (40, 5), Dn((2,), (0,))),  # lhs free dims merged into rows
]
OTHERS = [  # the kernel leaves these alone (lowered size rule)
    ((40, 64), (40, 10), Dn((0,), (0,))),  # lhs transposed: its rows are not contiguous
    ((2, 64, 32), (2, 32, 8), Dn((2,), (1,), (0,), (0,))),  # batched
    ((64, 5), (5, 10), MATMUL),  # k shorter than one vector
    ((64, 40), (40, 1), MATMUL),  # one column: gemv
    ((64, 40), (40, 17), MATMUL),  # more than MAX_COLUMNS columns
]


@pytest.fixture
def narrow_below_minimum(monkeypatch):
    monkeypatch.setattr(narrow_dot, "MIN_PRODUCTS", 1)
    monkeypatch.setattr(narrow_dot, "POOL_MIN_PRODUCTS", 1)  # small ones split on the pool too
    monkeypatch.setenv("HLORT_CACHE", "0")  # no program compiled under the lowered rule is kept


@pytest.fixture(params=[1, 2], ids=["one thread", "two parts"])
def workers(request, monkeypatch):
    monkeypatch.setattr(narrow_dot, "worker_count", lambda: request.param)
    return request.param


def _run(dtype, case, special):
    return run_dot(dtype, case, special, seed=5)


@pytest.mark.parametrize("special", [True, False])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_the_mlp_logits_match_the_interpreter(dtype, special, workers, monkeypatch):
    monkeypatch.setenv("HLORT_CACHE", "0")  # the thread count is fixed when the thunk is made
    module, args, got, k, stats = _run(dtype, FULL, special)
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"] == {"dot (narrow)": 1}, stats
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("special", [True, False])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", NARROW, ids=str)
def test_narrow_dots_match_the_interpreter(case, dtype, special, workers, narrow_below_minimum):
    module, args, got, k, stats = _run(dtype, case, special)
    assert stats["compiled"] == {"dot (narrow)": 1}, stats
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("case", OTHERS, ids=str)
def test_other_layouts_keep_their_path(case, narrow_below_minimum):
    module, args, got, k, stats = _run("f32", case, True)
    assert "dot (narrow)" not in stats["compiled"], stats
    assert_matches_reference(module, args, got, k)


def test_below_the_size_rule_the_small_kernel_keeps_the_dot():
    module, args, got, k, stats = _run("f32", ((128, 512), (512, 10), MATMUL), False)
    assert stats["compiled"] == {"dot (small matmul)": 1}, stats
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "s32"])
def test_other_types_keep_their_arithmetic(dtype):
    module, args, got, k, stats = _run(dtype, FULL, False)
    assert "dot (narrow)" not in stats["compiled"], stats
    assert_matches_reference(module, args, got, k)


def test_empty_dots_are_zeros(narrow_below_minimum):
    for lhs, rhs in [((8, 0), (0, 10)), ((0, 32), (32, 10))]:
        _, _, got, _, _ = _run("f32", (lhs, rhs, MATMUL), False)
        np.testing.assert_array_equal(got, np.zeros((lhs[0], rhs[1]), np.float32))


def test_one_kernel_serves_every_m_and_k():
    assert narrow_dot.narrow_kernel(False, 10) is narrow_dot.narrow_kernel(False, 10)
    one = narrow_dot.NarrowDot(False, 300, 10, 1024)
    other = narrow_dot.NarrowDot(False, 7, 10, 33)
    assert one.kernel is other.kernel
