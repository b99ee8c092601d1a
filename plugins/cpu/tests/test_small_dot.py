"""Dots the DotThunk runs in the small-matmul kernel (small_dot.py) against the interpreter.

Tolerance, stated (contraction_tolerance.assert_matches_reference): ``2 (K + 2) eps sum |a b|
+ eps |ref|`` per element, NaN where the reference has NaN, equal infinities. The inputs hold
NaN, +-inf, -0.0 and subnormals among normal values (``special``), or only normal values.
Not values near the overflow threshold: a fused multiply-add does not round a product to
infinity on its own (``fma(3.4e38, -1.5, inf)`` is inf where the interpreter's separate product
overflows to -inf and the sum is NaN), as with BLAS's own fma kernels. Layouts: row-major, a
transposed lhs, a transposed rhs (copied to C order first), batches (leading and in the
middle), size-1 dimensions; the small shapes run with the rule's minimum size lowered (the
``small_below_minimum`` fixture) so tails and batches stay cheap to test. Each case also checks
which path the dot took (the stats label); shapes the rule leaves to BLAS are checked to stay
there.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from dot_run import run_dot  # noqa: E402

from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort_cpu import small_dot  # noqa: E402

MATMUL = Dn((1,), (0,))
SMALL = [  # lhs dims, rhs dims, dimension numbers
    ((128, 512), (512, 10), MATMUL),  # an MLP's logits
    ((128, 512), (128, 10), Dn((0,), (0,))),  # its weight gradient: lhs transposed
    ((128, 10), (512, 10), Dn((1,), (1,))),  # its input gradient: rhs transposed, copied
    ((64, 9), (9, 200), MATMUL),  # k small, n wide, 64 rows
    ((13, 37), (37, 29), MATMUL),  # row and column tails
    ((3, 6, 9), (3, 9, 7), Dn((2,), (1,), (0,), (0,))),  # batched
    ((6, 3, 9), (3, 9, 7), Dn((2,), (1,), (1,), (0,))),  # batch in the middle of the lhs
    ((2, 20, 5), (2, 6, 5), Dn((2,), (2,), (0,), (0,))),  # batched, rhs transposed
    ((2, 2), (2, 4), MATMUL),  # k = 2
]
BLAS = [  # the rule keeps these with BLAS
    ((64, 32), (32, 1), MATMUL),  # a vector result
    ((1, 64), (64, 32), MATMUL),  # one row
    ((16, 16), (16, 1024), MATMUL),  # few rows, wide rows
    ((128, 1024), (1024, 20), MATMUL),  # 2^20 products or more: split across the pool
    ((8, 10), (512, 10), Dn((1,), (1,))),  # transposed rhs, too few rows to copy it
    ((13, 37), (37, 29), MATMUL),  # under 2^16 products: not worth a compile
]


@pytest.fixture
def small_below_minimum(monkeypatch):
    monkeypatch.setattr(small_dot, "SMALL_DOT_MIN_PRODUCTS", 1)
    monkeypatch.setenv("HLORT_CACHE", "0")  # no program compiled under the lowered rule is kept


def _run(dtype, case, special):
    return run_dot(dtype, case, special, seed=11)


@pytest.mark.parametrize("special", [True, False])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", SMALL, ids=str)
def test_small_dots_match_the_interpreter(case, dtype, special, small_below_minimum):
    module, args, got, k, stats = _run(dtype, case, special)
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"] == {"dot (small matmul)": 1}, stats
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("case", BLAS, ids=str)
def test_other_dots_stay_with_blas(case, dtype):
    module, args, got, k, stats = _run(dtype, case, True)
    assert stats["compiled"] == {"dot (BLAS)": 1}, stats
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("dtype", ["f16", "bf16", "c64", "s32"])
def test_other_types_keep_their_arithmetic(dtype):
    """Only plain f32/f64 dots take the kernel; the others keep their exact or converted
    arithmetic (contraction_arithmetic.py)."""
    module, args, got, k, stats = _run(dtype, SMALL[0], False)
    assert "dot (small matmul)" not in stats["compiled"], stats
    assert_matches_reference(module, args, got, k)


def test_empty_dots_are_zeros(small_below_minimum):
    for lhs, rhs in [((8, 0), (0, 10)), ((0, 16), (16, 10))]:
        module, args, got, _, stats = _run("f32", (lhs, rhs, MATMUL), False)
        np.testing.assert_array_equal(got, np.zeros((lhs[0], rhs[1]), np.float32))


def test_the_kernel_is_compiled_once_per_shape():
    g, copy = small_dot.small_dot_gemm(False, (512, 1), (10, 1), 1, 128, 10, 512)
    assert not copy
    assert small_dot.small_dot_kernel(g) is small_dot.small_dot_kernel(g)
