"""sort and topk: shape rules, comparator recognition, fast path and sorting network against
NumPy's stable argsort."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlort import dtypes
from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.interpreter import Evaluator, evaluate
from hlort.interpreter.ops.sort import network_perm
from hlort.ir.attributes import ComparisonDirection, ComparisonType
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import SortKey, lexicographic_comparator, simple_comparator
from hlort.ir.verifier import verify_module
from hlort.shape import TupleShape, array, scalar

ORDERED = [
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
]


def _np(dtype: str) -> np.dtype:
    return dtypes.from_hlo_name(dtype).numpy


def run(module, *args):
    return evaluate(module, list(args))


def _params(sub: Builder, dtypes_):
    """lhs0, rhs0, lhs1, rhs1, ... for the given element types."""
    out = []
    for i, d in enumerate(dtypes_):
        out.append(sub.parameter(scalar(d), f"lhs{i}"))
        out.append(sub.parameter(scalar(d), f"rhs{i}"))
    return out


def comparator(b: Builder, dtypes_, body, name="cmp"):
    sub = b.sub(name)
    return sub.finish(body(sub, _params(sub, dtypes_)))


def sort_module(dtypes_, dims, dimension, comp_fn, is_stable=True):
    b = Builder("sort")
    xs = [b.parameter(array(d, dims)) for d in dtypes_]
    comp = comp_fn(b)
    module = b.build(b.sort(xs, comp, dimension, is_stable))
    verify_module(module)
    return module, comp


def simple(dtypes_, direction="LT", ctype=None):
    return lambda b: b.comparator(dtypes_, direction, ctype)


def jax_lexicographic(dtypes_, num_keys, ctype=None):
    """JAX's _sort_lt_comparator: lt0 | (eq0 & (lt1 | (eq1 & ...))); ``ctype`` on float keys."""

    def body(s, p):
        result = None
        for k in reversed(range(num_keys)):
            kt = ctype if _np(dtypes_[k]).kind in "fV" else None
            lt = s.compare(p[2 * k], p[2 * k + 1], "LT", kt)
            if result is None:
                result = lt
            else:
                eq = s.compare(p[2 * k], p[2 * k + 1], "EQ", kt)
                result = s.or_(lt, s.and_(eq, result))
        return result

    return lambda b: comparator(b, dtypes_, body, "lex")


def general_ascending(dtypes_, key=0):
    """a < b written as not(a >= b): equal on non-NaN data, but not recognised."""
    return lambda b: comparator(
        b, dtypes_, lambda s, p: s.not_(s.compare(p[2 * key], p[2 * key + 1], "GE")), "not_ge"
    )


def general_descending(dtypes_, key=0):
    """a > b written with select on constants."""

    def body(s, p):
        gt = s.compare(p[2 * key], p[2 * key + 1], "GT")
        return s.select(gt, s.constant(np.bool_(True)), s.constant(np.bool_(False)))

    return lambda b: comparator(b, dtypes_, body, "select_gt")


def stable_reference(x: np.ndarray, axis: int, descending: bool = False) -> np.ndarray:
    keys = x.astype(np.float64) if np.dtype(x.dtype).kind in "fVb" else x.astype(np.int64)
    if descending:
        keys = -keys if keys.dtype == np.float64 else -keys.astype(np.float64)
    order = np.argsort(keys, axis=axis, kind="stable")
    return np.take_along_axis(x, order, axis)


# -- shape rules and recognition -----------------------------------------------------------------


def test_shapes():
    b = Builder("s")
    x = b.parameter(array("f32", [3, 4]))
    i = b.parameter(array("s32", [3, 4]))
    assert b.sort(x, b.comparator(["f32"])).shape == array("f32", [3, 4])
    both = b.sort([x, i], b.comparator(["f32", "s32"]), 0)
    assert both.shape == TupleShape((array("f32", [3, 4]), array("s32", [3, 4])))
    assert b.top_k(x, 2).shape == TupleShape((array("f32", [3, 2]), array("s32", [3, 2])))


@pytest.mark.parametrize(
    "case, message",
    [
        ("dims", "must have the dims of operand 0"),
        ("dimension", "out of range for rank 2"),
        ("two_dimensions", "exactly one dimension"),
        ("params", "(f32[], f32[], s32[], s32[]) -> pred[], but it has (f32[], f32[]) -> pred[]"),
        ("not_pred", "but it has (f32[], f32[]) -> f32[]"),
        ("topk_k", "k=5 must be an integer in [0, 4]"),
        ("topk_rank", "rank >= 1"),
        ("topk_complex", "has no order"),
    ],
)
def test_shape_rejects(case, message):
    b = Builder("s")
    x = b.parameter(array("f32", [3, 4]))
    with pytest.raises(InvalidArgument) as err:
        if case == "dims":
            b.sort([x, b.parameter(array("s32", [4, 3]))], b.comparator(["f32", "s32"]))
        elif case == "dimension":
            b.op(Opcode.SORT, (x,), dimensions=(2,), to_apply=b.comparator(["f32"]))
        elif case == "two_dimensions":
            b.op(Opcode.SORT, (x,), dimensions=(0, 1), to_apply=b.comparator(["f32"]))
        elif case == "params":
            b.sort([x, b.parameter(array("s32", [3, 4]))], b.comparator(["f32"]))
        elif case == "not_pred":
            b.sort(x, b.scalar_computation("add", "f32"))
        elif case == "topk_k":
            b.top_k(x, 5)
        elif case == "topk_rank":
            b.top_k(b.parameter(scalar("f32")), 0)
        else:
            b.top_k(b.parameter(array("c64", [3])), 1)
    assert message in str(err.value)


def test_comparator_recognition():
    b = Builder("p")
    lt, gt = ComparisonDirection.LT, ComparisonDirection.GT
    assert simple_comparator(b.comparator(["f32"], "LT")) == SortKey(0, lt, ComparisonType.FLOAT)
    key = simple_comparator(b.comparator(["s32", "f32"], "GT"))
    assert key == SortKey(0, gt, ComparisonType.SIGNED) and key.descending
    swapped = comparator(b, ["u8"], lambda s, p: s.compare(p[1], p[0], "LT"))
    assert simple_comparator(swapped) == SortKey(0, gt, ComparisonType.UNSIGNED)
    on_second = comparator(
        b, ["f32", "f32"], lambda s, p: s.compare(p[2], p[3], "LT", "TOTALORDER")
    )
    assert simple_comparator(on_second) == SortKey(1, lt, ComparisonType.TOTALORDER)
    lex = jax_lexicographic(["f32", "s32", "u8"], 3, None)(b)
    keys = lexicographic_comparator(lex)
    assert [k.operand for k in keys] == [0, 1, 2] and all(k.direction is lt for k in keys)
    assert simple_comparator(lex) is None

    def select_form(s, p):  # select(eq0, lt1, gt0)
        return s.select(
            s.compare(p[0], p[1], "EQ"), s.compare(p[2], p[3], "LT"), s.compare(p[0], p[1], "GT")
        )

    keys = lexicographic_comparator(comparator(b, ["s32", "s32"], select_form))
    assert keys == (SortKey(0, gt, ComparisonType.SIGNED), SortKey(1, lt, ComparisonType.SIGNED))
    assert lexicographic_comparator(general_ascending(["f32"])(b)) is None
    assert lexicographic_comparator(general_descending(["f32"])(b)) is None
    mixed = comparator(b, ["f32"], lambda s, p: s.compare(p[0], p[0], "LT"))
    assert lexicographic_comparator(mixed) is None


def jax_canonical(s: Builder, p, dtype):
    """JAX's _canonicalize_float_for_sort: select(x != x, NaN, select(x == 0, 0, x))."""
    npd = _np(dtype)
    zero = s.constant(np.array(0).astype(npd))
    nan = s.constant(np.array(np.nan).astype(npd))
    return s.select(s.compare(p, p, "NE"), nan, s.select(s.compare(p, zero, "EQ"), zero, p))


def jax_sort_comparator(dtypes_, num_keys):
    """What jax.lax.sort emits: canonicalized float keys, TOTALORDER, lexicographic."""

    def body(s, p):
        result = None
        for k in reversed(range(num_keys)):
            lhs, rhs, kt = p[2 * k], p[2 * k + 1], None
            if _np(dtypes_[k]).kind in "fV":
                kt = "TOTALORDER"
                lhs, rhs = jax_canonical(s, lhs, dtypes_[k]), jax_canonical(s, rhs, dtypes_[k])
            lt = s.compare(lhs, rhs, "LT", kt)
            if result is not None:
                lt = s.or_(lt, s.and_(s.compare(lhs, rhs, "EQ", kt), result))
            result = lt
        return result

    return lambda b: comparator(b, dtypes_, body, "jax_lt")


def test_jax_canonicalized_comparator_is_recognised():
    b = Builder("p")
    lt = ComparisonDirection.LT
    keys = lexicographic_comparator(jax_sort_comparator(["s32", "f32", "bf16"], 3)(b))
    assert keys == (
        SortKey(0, lt, ComparisonType.SIGNED),
        SortKey(1, lt, ComparisonType.TOTALORDER, True),
        SortKey(2, lt, ComparisonType.TOTALORDER, True),
    )


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64"])
def test_jax_comparator_fast_path_equals_network_even_with_nans(dtype):
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 3, size=(4, 30)).astype(np.float64)
    x[x == 0] = rng.choice([0.0, -0.0], size=int((x == 0).sum()))
    x[rng.random(x.shape) < 0.2] = np.nan
    x[rng.random(x.shape) < 0.1] = -np.nan
    x[rng.random(x.shape) < 0.05] = -np.inf
    x = x.astype(_np(dtype))
    payload = np.broadcast_to(np.arange(30, dtype=np.int32), (4, 30)).copy()
    module, comp = sort_module([dtype, "s32"], [4, 30], 1, jax_sort_comparator([dtype, "s32"], 1))
    assert lexicographic_comparator(comp) is not None
    got_x, got_p = run(module, x, payload)
    perm = network_perm(Evaluator(), comp, [x, payload])
    np.testing.assert_array_equal(got_p, perm)
    wide = x.astype(np.float64)
    is_nan = np.isnan(wide)
    order = np.lexsort((np.where(is_nan, 0, wide), is_nan), axis=-1)  # NaNs tie, above +inf
    np.testing.assert_array_equal(got_p, order)
    assert np.isnan(got_x[:, -1].astype(np.float64)).all()


# -- fast path ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ORDERED)
@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_fast_sort_every_ordered_dtype(dtype, direction):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2 if dtype == "pred" else 50, size=(3, 17)).astype(_np(dtype))
    if _np(dtype).kind in "fV":
        x = (rng.standard_normal((3, 17)) * 10).astype(_np(dtype))
    module, comp = sort_module([dtype], [3, 17], 1, simple([dtype], direction))
    assert simple_comparator(comp) is not None
    got = run(module, x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, stable_reference(x, 1, direction == "GT"))


def _bits(x):
    return x.view(np.dtype(f"u{x.dtype.itemsize}"))


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16", "f8e5m2"])
def test_totalorder_orders_nan_signed_zero_and_inf(dtype):
    npd = _np(dtype)
    nan, inf = np.float64(np.nan), np.inf
    x = np.array([nan, 1, -0.0, inf, -nan, 0.0, -1, -inf]).astype(npd)
    want = np.array([-nan, -inf, -1, -0.0, 0.0, 1, inf, nan]).astype(npd)
    module, _ = sort_module([dtype], [8], 0, simple([dtype], "LT", "TOTALORDER"))
    np.testing.assert_array_equal(_bits(run(module, x)), _bits(want))
    module, _ = sort_module([dtype], [8], 0, simple([dtype], "GT", "TOTALORDER"))
    np.testing.assert_array_equal(_bits(run(module, x)), _bits(want[::-1]))


def test_float_comparison_keeps_zeros_in_order_and_puts_nan_last():
    x = np.array([0.0, -0.0, np.nan, 1.0, -0.0, -np.inf], np.float32)
    module, _ = sort_module(["f32"], [6], 0, simple(["f32"], "LT"))
    got = run(module, x)
    assert got[0] == -np.inf and got[4] == 1 and np.isnan(got[5])
    np.testing.assert_array_equal(np.signbit(got[1:4]), [False, True, True])


def test_stability_with_duplicate_keys_and_payloads():
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 4, size=(5, 40)).astype(np.int32)
    payload = np.broadcast_to(np.arange(40, dtype=np.int32), (5, 40)).copy()
    fvals = rng.standard_normal((5, 40)).astype(np.float32)
    for comp_fn in (simple(["s32", "s32", "f32"]), general_ascending(["s32", "s32", "f32"])):
        module, _ = sort_module(["s32", "s32", "f32"], [5, 40], 1, comp_fn, is_stable=False)
        k, p, f = run(module, keys, payload, fvals)
        order = np.argsort(keys, axis=1, kind="stable")
        np.testing.assert_array_equal(k, np.take_along_axis(keys, order, 1))
        np.testing.assert_array_equal(p, order)
        np.testing.assert_array_equal(f, np.take_along_axis(fvals, order, 1))


def test_multi_key_sort_matches_lexsort():
    rng = np.random.default_rng(2)
    a = rng.integers(0, 3, size=50).astype(np.float32)
    c = rng.integers(0, 3, size=50).astype(np.int32)
    d = rng.standard_normal(50).astype(np.float32)
    for comp_fn in (
        jax_lexicographic(["f32", "s32", "f32"], 2, "TOTALORDER"),
        jax_lexicographic(["f32", "s32", "f32"], 2),
    ):
        module, comp = sort_module(["f32", "s32", "f32"], [50], 0, comp_fn)
        assert len(lexicographic_comparator(comp)) == 2
        ga, gc, gd = run(module, a, c, d)
        order = np.lexsort((c, a))
        np.testing.assert_array_equal(ga, a[order])
        np.testing.assert_array_equal(gc, c[order])
        np.testing.assert_array_equal(gd, d[order])


def test_sort_on_second_operand_and_other_dimensions():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    y = rng.integers(0, 5, size=(4, 6, 5)).astype(np.int64)
    for dim in (0, 1, 2):
        module, _ = sort_module(
            ["f32", "s64"],
            [4, 6, 5],
            dim,
            lambda b: comparator(b, ["f32", "s64"], lambda s, p: s.compare(p[3], p[2], "LT")),
        )
        gx, gy = run(module, x, y)
        order = np.argsort(-y, axis=dim, kind="stable")
        np.testing.assert_array_equal(gy, np.take_along_axis(y, order, dim))
        np.testing.assert_array_equal(gx, np.take_along_axis(x, order, dim))


# -- general comparators (sorting network) --------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 17, 100])
def test_general_comparators_match_fast_path(n):
    rng = np.random.default_rng(n)
    x = rng.integers(-20, 20, size=(3, n)).astype(np.float32)
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), (3, n)).copy()
    for fast, general in (
        (simple(["f32", "s32"], "LT"), general_ascending(["f32", "s32"])),
        (simple(["f32", "s32"], "GT"), general_descending(["f32", "s32"])),
    ):
        want = run(sort_module(["f32", "s32"], [3, n], 1, fast)[0], x, idx)
        module, comp = sort_module(["f32", "s32"], [3, n], 1, general)
        assert lexicographic_comparator(comp) is None
        got = run(module, x, idx)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_general_comparator_on_derived_key():
    """Sort by |x| (a comparator computing on its parameters), stable among equal |x|."""
    x = np.array([3, -1, 2, -3, 1, 0, -2, 2], np.int32)
    module, _ = sort_module(
        ["s32"],
        [8],
        0,
        lambda b: comparator(b, ["s32"], lambda s, p: s.compare(s.abs(p[0]), s.abs(p[1]), "LT")),
    )
    got = run(module, x)
    np.testing.assert_array_equal(got, x[np.argsort(np.abs(x), kind="stable")])


def test_general_comparator_in_bf16_and_unsorted_dims():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 9)).astype(ml_dtypes.bfloat16)
    module, _ = sort_module(["bf16"], [2, 3, 9], 1, general_descending(["bf16"]))
    got = run(module, x)
    np.testing.assert_array_equal(
        got.astype(np.float32), stable_reference(x, 1, True).astype(np.float32)
    )


# -- property tests -----------------------------------------------------------------------------


@st.composite
def sort_cases(draw):
    rank = draw(st.integers(1, 3))
    dims = [draw(st.integers(0, 9)) for _ in range(rank)]
    dim = draw(st.integers(0, rank - 1))
    dtype = draw(st.sampled_from(["s32", "u16", "f32", "f64"]))
    return dims, dim, dtype, draw(st.booleans()), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(sort_cases())
def test_property_sort_matches_stable_argsort(case):
    dims, dim, dtype, descending, seed = case
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=dims).astype(_np(dtype))
    payload = rng.standard_normal(dims).astype(np.float32)
    order = np.argsort(-x.astype(np.float64) if descending else x, axis=dim, kind="stable")
    fast = simple([dtype, "f32"], "GT" if descending else "LT")
    general = (general_descending if descending else general_ascending)([dtype, "f32"])
    for comp_fn in (fast, general):
        gx, gp = run(sort_module([dtype, "f32"], dims, dim, comp_fn)[0], x, payload)
        np.testing.assert_array_equal(gx, np.take_along_axis(x, order, dim))
        np.testing.assert_array_equal(gp, np.take_along_axis(payload, order, dim))


# -- topk ---------------------------------------------------------------------------------------


def topk_module(dtype, dims, k, largest=True):
    b = Builder("topk")
    module = b.build(b.top_k(b.parameter(array(dtype, dims)), k, largest))
    verify_module(module)
    return module


@pytest.mark.parametrize("dtype", ORDERED)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_values_and_indices_with_ties(dtype, largest):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2 if dtype == "pred" else 6, size=(3, 12)).astype(_np(dtype))
    values, indices = run(topk_module(dtype, [3, 12], 5, largest), x)
    keys = x.astype(np.float64)
    order = np.argsort(-keys if largest else keys, axis=-1, kind="stable")[:, :5]
    assert values.dtype == x.dtype and indices.dtype == np.int32
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, -1))


def test_topk_orders_nan_and_signed_zero_by_total_order():
    nan = np.float32(np.nan)
    x = np.array([1.0, nan, -0.0, np.inf, 0.0, -nan, -1.0], np.float32)
    values, indices = run(topk_module("f32", [7], 7), x)
    np.testing.assert_array_equal(indices, [1, 3, 0, 4, 2, 6, 5])
    np.testing.assert_array_equal(_bits(values), _bits(x[[1, 3, 0, 4, 2, 6, 5]]))
    values, indices = run(topk_module("f32", [7], 3, largest=False), x)
    np.testing.assert_array_equal(indices, [5, 6, 2])


def test_topk_edges():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    values, indices = run(topk_module("f32", [2, 3, 4], 0), x)
    assert values.shape == (2, 3, 0) and indices.shape == (2, 3, 0)
    values, indices = run(topk_module("f32", [2, 3, 4], 4), x)
    np.testing.assert_array_equal(values, x[..., ::-1])
    np.testing.assert_array_equal(indices, np.broadcast_to([3, 2, 1, 0], (2, 3, 4)))
