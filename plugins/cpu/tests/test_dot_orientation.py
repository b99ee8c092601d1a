"""Dots the DotThunk runs transposed (``a @ w^T`` with few rows: ``(w @ a^T)^T``, dot.py's
runs_transposed) against the interpreter, and the ones it keeps in their own orientation.

Tolerance, stated (contraction_tolerance.assert_matches_reference): ``2 (K + 2) eps sum |a b|
+ eps |ref|`` per element, NaN where the reference has NaN, equal infinities. Inputs hold NaN,
+-inf, -0.0 and a subnormal among normal values, or only normal values. Shapes: AdamW's input
gradient (m 64, k 512, n 256), few rows (m 4 and 8), a row count that is no multiple of a gemm
block, with one thread and with the product split in parts over two (dot_split.py). Each case
checks the path the dot took (the stats label).
"""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from dot_run import run_dot  # noqa: E402

from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort_cpu import dot_split, thread_pool  # noqa: E402

NT = Dn((1,), (1,))  # a [m, k] . w [n, k], contracting both last dimensions
TRANSPOSED = [
    ((64, 512), (256, 512), NT),  # AdamW's dy . W^T
    ((8, 512), (512, 512), NT),
    ((4, 40), (300, 40), NT),  # the least rows the rule takes
    ((37, 300), (129, 300), NT),  # no multiple of a block in m or n
]
KEPT = [  # the rule leaves these alone
    ((64, 256), (512, 256), NT),  # k < 8 m: the copy back would cost more than it saves
    ((2, 512), (512, 512), NT),  # gemv-like: fewer than 4 rows
    ((256, 2048), (128, 2048), NT),  # m > n
    ((64, 512), (512, 256), Dn((1,), (0,))),  # rhs not transposed
    ((512, 64), (256, 512), Dn((0,), (1,))),  # lhs transposed
    ((2, 16, 512), (2, 64, 512), Dn((2,), (2,), (0,), (0,))),  # batched
]
LABEL = "dot (BLAS, transposed)"


@pytest.fixture(params=[1, 2], ids=["one thread", "two parts"])
def workers(request, monkeypatch):
    monkeypatch.setattr(dot_split, "worker_count", lambda: request.param)
    monkeypatch.setattr(thread_pool, "worker_count", lambda: request.param)
    monkeypatch.setattr(dot_split, "SPLIT_MIN_PRODUCTS", 1)  # small ones split too
    monkeypatch.setattr(dot_split, "_PLANS", {})  # no plan made under other settings
    return request.param


@pytest.mark.parametrize("special", [True, False])
@pytest.mark.parametrize("case", TRANSPOSED, ids=str)
def test_transposed_dots_match_the_interpreter(case, special, workers):
    module, args, got, k, stats = run_dot("f32", case, special, seed=7)
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"] == {LABEL: 1}, stats
    assert got.flags.c_contiguous and got.shape == (case[0][0], case[1][0])
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("case", KEPT, ids=str)
def test_other_shapes_keep_their_orientation(case):
    module, args, got, k, stats = run_dot("f32", case, True, seed=8)
    assert LABEL not in stats["compiled"], stats
    assert_matches_reference(module, args, got, k)


@pytest.mark.parametrize("dtype", ["f64", "c64", "bf16", "s32"])
def test_other_types_keep_their_orientation(dtype):
    special = dtype in ("f64", "bf16")  # (c64 with NaN/inf differs on main too; s32 has none)
    module, args, got, k, stats = run_dot(dtype, TRANSPOSED[0], special, seed=9)
    assert not any("transposed" in label for label in stats["compiled"]), stats
    assert_matches_reference(module, args, got, k)
