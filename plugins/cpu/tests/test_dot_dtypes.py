"""Dots of every element type on the cpu backend vs the reference interpreter.

Integer and pred dots must match bit for bit (wrapping included; pred into a float type is an
exact count, also bit for bit). Float dots may differ from the
interpreter only by summation order: per element, ``|cpu - ref| <= 2 (K + 2) eps(acc) sum_k
|a_k b_k| + eps(result) |ref|`` (twice the standard dot-product error bound in the accumulation
type, plus one rounding to the result type), with NaN where the interpreter has NaN and equal
infinities. Complex dots of at most 64 products per element are summed in XLA's order, so they
must match bit for bit. Every program must run without an interpreter FALLBACK.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

pytest.importorskip("llvmlite")
hypothesis = pytest.importorskip("hypothesis")
from contraction_tolerance import assert_matches_reference  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort.testing.values import random_values  # noqa: E402
from hlort_cpu.dot import DotThunk, MatrixOperand, plan_matrix_view  # noqa: E402


def _dot_module(lhs_type, lhs_dims, rhs_type, rhs_dims, dn, preferred=None):
    b = Builder("dot")
    x = b.parameter(shape.array(lhs_type, lhs_dims))
    y = b.parameter(shape.array(rhs_type, rhs_dims))
    return b.build(b.dot_general(x, y, dn, preferred=preferred))


def _values(type_name: str, dims, rng, low=None, high=None) -> np.ndarray:
    dt = dtypes.from_hlo_name(type_name)
    if dt.is_float and low is None:
        low, high = -3.0, 3.0
    return random_values(dt, tuple(dims), rng, low, high)


def _contraction_size(module) -> int:
    dot = module.entry.root
    lhs = dot.operands[0].shape
    dn = dot.attrs["dot_dimension_numbers"]
    return math.prod(lhs.dims[d] for d in dn.lhs_contracting_dims)


def _run_compiled(module, args, expect_dot: bool = True):
    exe = hlort.compile(module, "cpu")
    got = exe(*args)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    if expect_dot:
        assert any(label.startswith("dot") for label in stats["compiled"]), stats
    return got


MATMUL = Dn((1,), (0,))

SAME_TYPE = [
    "pred",
    "s8",
    "s16",
    "s32",
    "s64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8e4m3fn",
    "f8e5m2",
    "c64",
    "c128",
]

MIXED = [  # (lhs, rhs, declared result or None)
    ("pred", "pred", "s32"),
    ("pred", "pred", "f32"),
    ("pred", "pred", "bf16"),
    ("s8", "s8", "s32"),
    ("s8", "s8", "s8"),
    ("u8", "s8", "s16"),
    ("u8", "u8", "u32"),
    ("s16", "u32", "u64"),
    ("s16", "s16", "s64"),
    ("s32", "s32", "s64"),
    ("u32", "s8", "s32"),
    ("u64", "s64", None),
    ("s64", "s64", "u64"),
    ("f16", "f32", None),
    ("bf16", "bf16", "f32"),
    ("f16", "f16", "f32"),
    ("bf16", "f16", None),
    ("f32", "f64", None),
    ("f64", "f64", "f16"),
    ("f32", "f32", "bf16"),
    ("f8e4m3fn", "f8e5m2", "f32"),
    ("f8e5m2", "f8e5m2", "bf16"),
    ("c64", "c128", None),
    ("c128", "c128", "c64"),
]


@pytest.mark.parametrize("type_name", SAME_TYPE)
def test_same_type_dot_matches_interpreter(type_name):
    rng = np.random.default_rng(1)
    module = _dot_module(type_name, (5, 7), type_name, (7, 3), MATMUL)
    args = [_values(type_name, (5, 7), rng), _values(type_name, (7, 3), rng)]
    assert_matches_reference(module, args, _run_compiled(module, args), 7)


@pytest.mark.parametrize("lhs_type,rhs_type,result", MIXED)
def test_mixed_type_dot_matches_interpreter(lhs_type, rhs_type, result):
    rng = np.random.default_rng(2)
    module = _dot_module(
        lhs_type, (2, 4, 6), rhs_type, (2, 6, 5), Dn((2,), (1,), (0,), (0,)), preferred=result
    )
    args = [_values(lhs_type, (2, 4, 6), rng), _values(rhs_type, (2, 6, 5), rng)]
    assert_matches_reference(module, args, _run_compiled(module, args), 6)


@pytest.mark.parametrize(
    "type_name,result",
    [
        ("s8", None),
        ("s8", "s32"),
        ("u8", "u16"),
        ("s16", "s32"),
        ("u16", None),
        ("s32", None),
        ("s64", None),
        ("u64", None),
        ("u32", "s64"),
    ],
)
def test_full_range_integer_dots_wrap_like_the_interpreter(type_name, result):
    """Full-range values: products and sums overflow and wrap; also across BLAS's K blocks."""
    rng = np.random.default_rng(3)
    for k in (3, 300):
        module = _dot_module(type_name, (6, k), type_name, (k, 5), MATMUL, preferred=result)
        args = [_values(type_name, (6, k), rng), _values(type_name, (k, 5), rng)]
        assert_matches_reference(module, args, _run_compiled(module, args), k)


@pytest.mark.parametrize("k,compute", [(258, "float32"), (259, "float64")])
def test_integer_sums_at_the_exact_float_limit_are_exact(k, compute):
    """u8 x u8: K * 255^2 <= 2^24 sums in f32 (K = 258), beyond in f64 (K = 259, whose all-255
    sum 16,841,475 is odd and above 2^24: f32 could not hold it)."""
    module = _dot_module("u8", (2, k), "u8", (k, 2), MATMUL, preferred="u32")
    args = [np.full((2, k), 255, np.uint8), np.full((k, 2), 255, np.uint8)]
    assert DotThunk(module.entry.root, [0, 1], 2).arithmetic.compute == np.dtype(compute)
    got = _run_compiled(module, args)
    np.testing.assert_array_equal(got, np.full((2, 2), 255 * 255 * k, np.uint32))


def test_pred_dot_is_or_of_ands_and_counts():
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 2, (4, 9)).astype(bool), rng.integers(0, 2, (9, 3)).astype(bool)
    a[0] = False
    for result in (None, "s32", "u8", "f16"):
        module = _dot_module("pred", (4, 9), "pred", (9, 3), MATMUL, preferred=result)
        got = _run_compiled(module, [a, b])
        assert_matches_reference(module, [a, b], got, 9)
    counts = a.astype(np.int64) @ b.astype(np.int64)
    module = _dot_module("pred", (4, 9), "pred", (9, 3), MATMUL)
    np.testing.assert_array_equal(_run_compiled(module, [a, b]), counts > 0)


@pytest.mark.parametrize("type_name", ["f32", "f64", "f16", "bf16", "c64", "c128"])
def test_nan_inf_and_signed_zero(type_name):
    rng = np.random.default_rng(5)
    a, b = _values(type_name, (6, 8), rng), _values(type_name, (8, 7), rng)
    a[0, 0], a[1, 3], b[2, 1], b[5, 4] = np.nan, np.inf, -np.inf, 0.0
    a[2, :] = -0.0  # row 2 of the result: sums of -0.0 products are +0.0, as in XLA
    a[3, 5] = np.inf  # inf * 0 (b[5, 4] == 0) is NaN
    module = _dot_module(type_name, (6, 8), type_name, (8, 7), MATMUL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # inf - inf and overflow stay silent, as in XLA
        assert_matches_reference(module, [a, b], _run_thunk(module, [a, b]), 8)
    got = _run_compiled(module, [a, b])
    assert_matches_reference(module, [a, b], got, 8)
    if not np.iscomplexobj(got):
        row = got[2].astype(np.float32)  # column 1 is -0.0 * -inf = NaN
        np.testing.assert_array_equal(row[np.arange(7) != 1], 0.0)
        assert not np.signbit(row[np.arange(7) != 1]).any() and np.isnan(row[1])
        assert np.isnan(got[3, 4].astype(np.float32))


LAYOUTS = {  # name: (lhs dims, rhs dims, dimension numbers)
    "matmul": ((4, 6), (6, 5), Dn((1,), (0,))),
    "lhs-transposed": ((6, 4), (6, 5), Dn((0,), (0,))),
    "rhs-transposed": ((4, 6), (5, 6), Dn((1,), (1,))),
    "both-transposed": ((6, 4), (5, 6), Dn((0,), (1,))),
    "batch-leading": ((3, 4, 6), (3, 6, 5), Dn((2,), (1,), (0,), (0,))),
    "batch-inner": ((4, 3, 6), (6, 5, 3), Dn((2,), (0,), (1,), (2,))),
    "two-contracting": ((4, 2, 3), (2, 3, 5), Dn((1, 2), (0, 1))),
    "contracting-reordered": ((4, 2, 3), (3, 2, 5), Dn((1, 2), (1, 0))),
    "free-between-contracting": ((2, 4, 3), (2, 3, 5), Dn((0, 2), (0, 1))),
    "several-free": ((2, 3, 6), (6, 4, 2), Dn((2,), (0,))),
    "matvec": ((4, 6), (6,), Dn((1,), (0,))),
    "vecmat": ((6,), (6, 5), Dn((0,), (0,))),
    "vecvec": ((6,), (6,), Dn((0,), (0,))),
    "outer": ((4,), (5,), Dn()),
    "scalars": ((), (), Dn()),
    "batched-matvec": ((3, 4, 6), (3, 6), Dn((2,), (1,), (0,), (0,))),
    "unit-dims": ((1, 6, 1), (6, 1), Dn((1,), (0,))),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@pytest.mark.parametrize("type_name", ["f32", "s32", "bf16", "c64"])
def test_dimension_numbers(name, type_name):
    lhs_dims, rhs_dims, dn = LAYOUTS[name]
    rng = np.random.default_rng(6)
    module = _dot_module(type_name, lhs_dims, type_name, rhs_dims, dn)
    args = [_values(type_name, lhs_dims, rng, -8, 8), _values(type_name, rhs_dims, rng, -8, 8)]
    k = _contraction_size(module)
    assert_matches_reference(module, args, _run_thunk(module, args), k)
    # the core passes turn a one-product dot of ints or floats into a multiply
    compiled = _run_compiled(module, args, expect_dot=k != 1)
    assert_matches_reference(module, args, compiled, k)


def _run_thunk(module, args):
    """The DotThunk alone (no core passes, which rewrite K = 1 dots into multiplies)."""
    thunk = DotThunk(module.entry.root, [0, 1], 2)
    env = [*args, None]
    thunk(env)
    return env[2]


@pytest.mark.parametrize(
    "lhs_dims,rhs_dims,dn",
    [
        ((3, 0), (0, 4), Dn((1,), (0,))),
        ((0, 5), (5, 4), Dn((1,), (0,))),
        ((3, 5), (5, 0), Dn((1,), (0,))),
        ((0, 3, 5), (0, 5, 2), Dn((2,), (1,), (0,), (0,))),
    ],
)
@pytest.mark.parametrize("type_name", ["f32", "s8", "pred", "f16", "c128"])
def test_empty_dimensions(lhs_dims, rhs_dims, dn, type_name):
    rng = np.random.default_rng(7)
    module = _dot_module(type_name, lhs_dims, type_name, rhs_dims, dn)
    args = [_values(type_name, lhs_dims, rng), _values(type_name, rhs_dims, rng)]
    got = _run_thunk(module, args)
    assert_matches_reference(module, args, got, 0)
    assert_matches_reference(module, args, _run_compiled(module, args, expect_dot=False), 0)


def test_constant_operand():
    """A literal operand (a constant of the module) is read in place, like any other."""
    rng = np.random.default_rng(8)
    weights = rng.standard_normal((6, 5)).astype(np.float32)
    b = Builder("dot_constant")
    x = b.parameter(shape.array("f32", (6, 4)))
    module = b.build(b.dot_general(x, b.constant(weights), Dn((0,), (0,))))
    args = [rng.standard_normal((6, 4)).astype(np.float32)]
    assert_matches_reference(module, args, _run_compiled(module, args), 6)


@pytest.mark.parametrize(
    "dims,groups",
    [
        ((6, 4), ((), (1,), (0,))),  # lhs contracting its first dim: a transposed view
        ((4, 6), ((), (0,), (1,))),
        ((3, 4, 6), ((0,), (1,), (2,))),
        ((4, 3, 6), ((1,), (0,), (2,))),  # batch in the middle: strided batches
        ((2, 3, 6), ((), (0, 1), (2,))),  # two free dims merge
    ],
)
def test_blas_ready_layouts_are_views_not_copies(dims, groups):
    view = plan_matrix_view(dims, groups, keep_batch=bool(groups[0]))
    assert view.strides is not None
    x = np.arange(math.prod(dims), dtype=np.float32).reshape(dims)
    matrix = MatrixOperand(view, dims, np.dtype(np.float32), x.dtype)(x)
    assert np.shares_memory(matrix, x)
    expected = np.transpose(x, view.perm).reshape(view.shape)
    np.testing.assert_array_equal(matrix, expected)


def test_unmergeable_layout_is_copied_correctly():
    dims, groups = (2, 4, 3), ((), (1,), (0, 2))  # a free dim between two contracting dims
    view = plan_matrix_view(dims, groups, keep_batch=False)
    assert view.strides is None
    x = np.arange(24, dtype=np.int16).reshape(dims)
    matrix = MatrixOperand(view, dims, np.dtype(np.float32), x.dtype)(x)
    np.testing.assert_array_equal(matrix, np.transpose(x, (1, 0, 2)).reshape(4, 6))


@st.composite
def dot_programs(draw):
    n_batch, n_lhs_free, n_rhs_free, n_contract = (draw(st.integers(0, 2)) for _ in range(4))
    size = st.integers(0, 4)
    batch = [draw(size) for _ in range(n_batch)]
    lhs_free = [draw(size) for _ in range(n_lhs_free)]
    rhs_free = [draw(size) for _ in range(n_rhs_free)]
    contract = [draw(size) for _ in range(n_contract)]
    lhs_roles = batch + lhs_free + contract
    rhs_roles = batch + contract + rhs_free
    lhs_perm = draw(st.permutations(range(len(lhs_roles))))
    rhs_perm = draw(st.permutations(range(len(rhs_roles))))
    lhs_dims = [0] * len(lhs_roles)
    rhs_dims = [0] * len(rhs_roles)
    for role, d in enumerate(lhs_perm):
        lhs_dims[d] = lhs_roles[role]
    for role, d in enumerate(rhs_perm):
        rhs_dims[d] = rhs_roles[role]
    where_lhs = lambda first, count: tuple(lhs_perm[first : first + count])  # noqa: E731
    where_rhs = lambda first, count: tuple(rhs_perm[first : first + count])  # noqa: E731
    dn = Dn(
        where_lhs(n_batch + n_lhs_free, n_contract),
        where_rhs(n_batch, n_contract),
        where_lhs(0, n_batch),
        where_rhs(0, n_batch),
    )
    type_name = draw(st.sampled_from(["f32", "f64", "s16", "u32", "bf16", "c64", "pred"]))
    return type_name, tuple(lhs_dims), tuple(rhs_dims), dn, draw(st.integers(0, 2**16))


@settings(max_examples=40, deadline=None)
@given(dot_programs())
def test_random_dimension_numbers_match_interpreter(program):
    type_name, lhs_dims, rhs_dims, dn, seed = program
    rng = np.random.default_rng(seed)
    module = _dot_module(type_name, lhs_dims, type_name, rhs_dims, dn)
    args = [_values(type_name, lhs_dims, rng, -8, 8), _values(type_name, rhs_dims, rng, -8, 8)]
    assert_matches_reference(module, args, _run_thunk(module, args), _contraction_size(module))
