"""reduce-window and select-and-scatter: shape rules and interpreter results against slow,
loop-based references that follow XLA's evaluator (padding and base-dilation holes are skipped)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reduce_window_helpers import (
    _np,
    reduce_window_module,
    reference_reduce_window,
    run,
    sas_module,
    select_max_reducer,
    sub_neg_reducer,
)

from hlort.builder import Builder
from hlort.errors import InvalidArgument
from hlort.ir.attributes import WindowDim, window_from_sizes
from hlort.shape import TupleShape, array, scalar

# -- shape rules --------------------------------------------------------------------------------


def test_shapes_of_pooling_windows():
    b = Builder("s")
    x = b.parameter(array("f32", [1, 7, 6, 3]))
    init = b.constant(np.float32(0))
    mx = b.scalar_computation("maximum", "f32")
    valid = window_from_sizes([1, 3, 3, 1], [1, 2, 2, 1])
    assert b.reduce_window(x, init, mx, valid).shape == array("f32", [1, 3, 2, 3])
    same = window_from_sizes([1, 3, 3, 1], [1, 2, 2, 1], [(0, 0), (1, 1), (1, 1), (0, 0)])
    assert b.reduce_window(x, init, mx, same).shape == array("f32", [1, 4, 3, 3])
    dilated = window_from_sizes(
        [1, 2, 2, 1], base_dilation=[1, 2, 1, 1], window_dilation=[1, 1, 3, 1]
    )
    assert b.reduce_window(x, init, mx, dilated).shape == array("f32", [1, 12, 3, 3])
    cropped = window_from_sizes([1, 1, 1, 1], padding=[(0, 0), (-2, -1), (0, 0), (0, 0)])
    assert b.reduce_window(x, init, mx, cropped).shape == array("f32", [1, 4, 6, 3])
    too_big = window_from_sizes([1, 9, 1, 1])
    assert b.reduce_window(x, init, mx, too_big).shape == array("f32", [1, 0, 6, 3])


def test_shape_variadic_reduce_window_is_tuple():
    b = Builder("s")
    x = b.parameter(array("f32", [4, 4]))
    i = b.parameter(array("s32", [4, 4]))
    r = b.reduce_window(
        [x, i],
        [b.constant(np.float32(0)), b.constant(np.int32(0))],
        argmax_reducer(b),
        window_from_sizes([2, 2], [2, 2]),
    )
    assert r.shape == TupleShape((array("f32", [2, 2]), array("s32", [2, 2])))


@pytest.mark.parametrize(
    "window, message",
    [
        (window_from_sizes([2]), "window has 1 dimension(s) but the operand has rank 2"),
        (window_from_sizes([0, 1]), "size=0 must be positive"),
        (window_from_sizes([1, 1], [1, 0]), "stride=0 must be positive"),
        (window_from_sizes([1, 1], base_dilation=[0, 1]), "base_dilation=0 must be positive"),
        (window_from_sizes([1, 1], window_dilation=[1, -1]), "window_dilation=-1"),
        (window_from_sizes([1, 1], padding=[(-3, -3), (0, 0)]), "negative size"),
        ((WindowDim(1, window_reversal=True), WindowDim(1)), "window_reversal"),
    ],
)
def test_shape_rejects_bad_windows(window, message):
    b = Builder("s")
    x = b.parameter(array("f32", [4, 4]))
    with pytest.raises(InvalidArgument) as err:
        b.reduce_window(x, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), window)
    assert message in str(err.value)


def test_shape_rejects_init_and_reducer_mismatches():
    b = Builder("s")
    x = b.parameter(array("f32", [4, 4]))
    w = window_from_sizes([2, 2])
    with pytest.raises(InvalidArgument, match="element type of input 0"):
        b.reduce_window(x, b.constant(np.array(0.0)), b.scalar_computation("add", "f32"), w)
    with pytest.raises(InvalidArgument, match=r"signature \(f32\[\], f32\[\]\) -> f32\[\]"):
        b.reduce_window(x, b.constant(np.float32(0)), b.scalar_computation("add", "f64"), w)


# -- reduce-window ------------------------------------------------------------------------------


def test_stablehlo_interpreter_cases():
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int64)
    w = window_from_sizes(
        [2, 1], [4, 1], [(2, 1), (0, 0)], base_dilation=[2, 1], window_dilation=[3, 1]
    )
    got = run(reduce_window_module("s64", [3, 2], w, "add"), x, np.int64(0))
    np.testing.assert_array_equal(got, [[0, 0], [3, 4]])
    w = window_from_sizes(
        [3, 1], [4, 1], [(2, 1), (0, 0)], base_dilation=[2, 1], window_dilation=[3, 1]
    )
    got = run(reduce_window_module("s64", [3, 2], w, "add"), x, np.int64(0))
    np.testing.assert_array_equal(got, [[5, 6]])


POOL_WINDOWS = {
    "plain": window_from_sizes([2, 2], [2, 2]),
    "padded_strided": window_from_sizes([3, 3], [2, 1], [(1, 1), (2, 0)]),
    "base_dilated": window_from_sizes([2, 3], [1, 2], [(1, 0), (0, 2)], base_dilation=[2, 3]),
    "window_dilated": window_from_sizes([2, 2], [1, 3], [(0, 1), (1, 1)], window_dilation=[2, 3]),
    "all": window_from_sizes(
        [3, 2], [2, 2], [(2, 1), (1, -1)], base_dilation=[2, 2], window_dilation=[2, 1]
    ),
}


@pytest.mark.parametrize("name", sorted(POOL_WINDOWS))
@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16", "s8", "u16", "s64"])
def test_max_pool_matches_reference(name, dtype):
    window = POOL_WINDOWS[name]
    rng = np.random.default_rng(0)
    x = rng.integers(-100, 100, size=(5, 7)).astype(_np(dtype) if dtype != "u16" else np.int64)
    x = x.astype(_np(dtype))
    low = np.array(-np.inf if _np(dtype).kind in "fV" else np.iinfo(_np(dtype)).min)
    init = low.astype(_np(dtype))
    got = run(reduce_window_module(dtype, [5, 7], window), x, init)
    (want,) = reference_reduce_window([x], [init], window, lambda a, v: (max(a[0], v[0]),))
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(POOL_WINDOWS))
def test_general_reducer_matches_fast_path_and_reference(name):
    window = POOL_WINDOWS[name]
    x = np.random.default_rng(1).integers(-100, 100, size=(5, 7)).astype(np.int32)
    init = np.int32(3)  # not an identity: shows that padding and holes are not reduced
    fast = run(reduce_window_module("s32", [5, 7], window, "add"), x, init)
    general = run(reduce_window_module("s32", [5, 7], window, sub_neg_reducer), x, init)
    (want,) = reference_reduce_window([x], [init], window, lambda a, v: (a[0] + v[0],))
    np.testing.assert_array_equal(fast, want)
    np.testing.assert_array_equal(general, want)
    xf = x.astype(np.float32)
    general_max = run(
        reduce_window_module("f32", [5, 7], window, select_max_reducer), xf, np.float32(-1000)
    )
    (want_max,) = reference_reduce_window(
        [xf], [np.float32(-1000)], window, lambda a, v: (max(a[0], v[0]),)
    )
    np.testing.assert_array_equal(general_max, want_max)


def test_padding_only_window_gives_init():
    w = window_from_sizes([2], [1], [(3, 0)])
    got = run(
        reduce_window_module("f32", [2], w, "add"), np.array([1, 2], np.float32), np.float32(10)
    )
    np.testing.assert_array_equal(got, [10, 10, 11, 13])


def test_sum_pool_float_and_negative_zero():
    x = np.array([[-0.0, -0.0], [-0.0, -0.0]], np.float32)
    got = run(
        reduce_window_module("f32", [2, 2], window_from_sizes([2, 2]), "add"), x, np.float32(-0.0)
    )
    assert got.shape == (1, 1) and np.signbit(got[0, 0])


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_max_min_pool_order_signed_zeros(dtype):
    """Regression: the ufunc fast path kept the first zero; HLO max(-0, +0) is +0 (min: -0)."""
    dt = _np(dtype)
    x = np.array([0.0, -0.0, -0.0, 0.0, -0.0, -0.0], dt)
    window = window_from_sizes([2], [2])
    got = run(reduce_window_module(dtype, [6], window, "maximum"), x, np.array(-np.inf, dt))
    np.testing.assert_array_equal(np.signbit(got), [False, False, True])
    got = run(reduce_window_module(dtype, [6], window, "minimum"), x, np.array(np.inf, dt))
    np.testing.assert_array_equal(np.signbit(got), [True, True, True])
    source = np.array([0.0, -0.0, -0.0], dt)
    operand = np.array([1, 0, 2, 0, 3, 0], dt)
    got = run(
        sas_module(dtype, [6], window, scatter="maximum"), operand, source, np.array(-0.0, dt)
    )
    np.testing.assert_array_equal(np.signbit(got), [False, True, True, True, True, True])


def test_max_pool_propagates_nan_and_keeps_inf():
    x = np.array([1, np.nan, 3, np.inf, -np.inf, 2], np.float32)
    got = run(reduce_window_module("f32", [6], window_from_sizes([2], [2])), x, np.float32(-np.inf))
    assert np.isnan(got[0]) and got[1] == np.inf and got[2] == 2


def test_empty_results_and_scalar_operand():
    x = np.zeros((3, 2), np.float32)
    got = run(reduce_window_module("f32", [3, 2], window_from_sizes([4, 1])), x, np.float32(0))
    assert got.shape == (0, 2)
    got = run(
        reduce_window_module("f32", [0, 2], window_from_sizes([1, 1])),
        np.zeros((0, 2), np.float32),
        np.float32(0),
    )
    assert got.shape == (0, 2)
    got = run(reduce_window_module("f32", [], ()), np.float32(2), np.float32(5))
    assert got.shape == () and got == 5
    got = run(reduce_window_module("f32", [], (), "add"), np.float32(2), np.float32(5))
    assert got == 7


# Summation order: XLA folds each window in row-major order from the init value, rounding to the
# element type at every step. reference_reduce_window is that fold, one element at a time, on
# NumPy scalars of the element type (a bf16 + bf16 rounds to bf16).

BIG = 2.0**25  # f32 spacing is 4 at 2^25: BIG + 1 rounds back to BIG


def _add(acc, v):
    return (acc[0] + v[0],)


def test_float_sum_starts_from_init():
    """Regression (corpus reduce_window_add_float*): the init was added after the window sum;
    here init + BIG loses the init, so the window sums to 0, not 1."""
    x = np.array([BIG, -BIG], np.float32)
    window = window_from_sizes([2])
    got = run(reduce_window_module("f32", [2], window, "add"), x, np.float32(1))
    (want,) = reference_reduce_window([x], [np.float32(1)], window, _add)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [0])


def test_float_sum_visits_a_2d_window_in_row_major_order():
    """Regression (corpus reduce_window_add_float32_12_12, 3x3 windows): row-major from the init,
    BIG absorbs each of the seven 1s and -BIG then cancels it: 0. NumPy's pairwise sum (8
    partial sums) kept some of the 1s."""
    x = np.array([[BIG, 1, 1], [1, 1, 1], [1, 1, -BIG]], np.float32)
    window = window_from_sizes([3, 3])
    got = run(reduce_window_module("f32", [3, 3], window, "add"), x, np.float32(0))
    (want,) = reference_reduce_window([x], [np.float32(0)], window, _add)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [[0]])


@pytest.mark.parametrize("dtype, big", [("bf16", 256), ("f16", 2048)])
def test_narrow_float_cumsum_rounds_every_step(dtype, big):
    """Regression (corpus cumsum_bfloat16_8_9): summing in f32 and rounding once gave big + 4;
    each big + 1 rounds back to big in the element type (a tie, to even)."""
    dt = _np(dtype)
    x = np.array([big, 1, 1, 1, 1], dt)
    window = window_from_sizes([5], [1], [(4, 0)])  # a cumulative sum, as JAX lowers cumsum
    got = run(reduce_window_module(dtype, [5], window, "add"), x, np.array(0, dt))
    (want,) = reference_reduce_window([x], [np.array(0, dt)], window, _add)
    assert got.dtype == dt
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got.astype(np.float32), [big] * 5)


def test_float_product_folds_in_order():
    x = np.array([3, 1 / 3, 3, 1 / 3, 3, 1 / 3, 3], np.float32)
    window = window_from_sizes([7], [1], [(6, 0)])
    got = run(reduce_window_module("f32", [7], window, "multiply"), x, np.float32(1 / 7))

    def mul(acc, v):
        return (acc[0] * v[0],)

    (want,) = reference_reduce_window([x], [np.float32(1 / 7)], window, mul)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_general_reducer_folds_in_window_order(dtype):
    """Regression (corpus cumlogsumexp_float16_8_9): a reducer that is not a plain op was applied
    as a pairwise tree; XLA folds acc = f(acc, x) in order. Tree: (BIG + 1) + (-BIG + 1) = 0."""
    dt = _np(dtype)
    big = BIG if dtype == "f32" else 256
    x = np.array([big, 1, -big, 1], dt)
    window = window_from_sizes([4], [1], [(3, 0)])
    module = reduce_window_module(dtype, [4], window, lambda b: sub_neg_reducer(b, dtype))
    got = run(module, x, np.array(0, dt))
    (want,) = reference_reduce_window([x], [np.array(0, dt)], window, _add)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got.astype(np.float32), [big, big, 0, 1])


def argmax_reducer(b: Builder):
    sub = b.sub("argmax")
    av, ai = sub.parameter(scalar("f32")), sub.parameter(scalar("s32"))
    xv, xi = sub.parameter(scalar("f32")), sub.parameter(scalar("s32"))
    pick_a = sub.or_(
        sub.compare(av, xv, "GT"), sub.and_(sub.compare(av, xv, "EQ"), sub.compare(ai, xi, "LT"))
    )
    return sub.finish(sub.tuple([sub.select(pick_a, av, xv), sub.select(pick_a, ai, xi)]))


def test_variadic_reduce_window_argmax_pool():
    rng = np.random.default_rng(2)
    x = rng.integers(0, 3, size=(6, 5)).astype(np.float32)
    idx = np.arange(30, dtype=np.int32).reshape(6, 5)
    window = window_from_sizes([3, 2], [2, 1], [(1, 1), (0, 1)])
    b = Builder("argmax_pool")
    xp = b.parameter(array("f32", [6, 5]))
    ip = b.parameter(array("s32", [6, 5]))
    inits = [b.constant(np.float32(-np.inf)), b.constant(np.int32(-1))]
    module = b.build(b.reduce_window([xp, ip], inits, argmax_reducer(b), window))
    values, indices = run(module, x, idx)

    def fn(acc, v):
        if acc[0] > v[0] or (acc[0] == v[0] and acc[1] < v[1]):
            return acc
        return v

    want_v, want_i = reference_reduce_window(
        [x, idx], [np.float32(-np.inf), np.int32(-1)], window, fn
    )
    np.testing.assert_array_equal(values, want_v)
    np.testing.assert_array_equal(indices, want_i)


@st.composite
def window_cases(draw):
    rank = draw(st.integers(1, 2))
    dims = [draw(st.integers(0, 5)) for _ in range(rank)]
    window = []
    for d in dims:
        base = draw(st.integers(1, 3))
        lo, hi = draw(st.integers(-2, 3)), draw(st.integers(-2, 3))
        if (max(d - 1, 0) * base + (1 if d else 0)) + lo + hi < 0:
            lo = hi = 0
        window.append(
            WindowDim(
                draw(st.integers(1, 3)),
                draw(st.integers(1, 3)),
                lo,
                hi,
                draw(st.integers(1, 3)),
                base,
            )
        )
    return dims, tuple(window), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=60, deadline=None)
@given(window_cases())
def test_property_reduce_window_matches_reference(case):
    dims, window, seed = case
    x = np.random.default_rng(seed).integers(-9, 9, size=dims).astype(np.int32)
    (want,) = reference_reduce_window([x], [np.int32(1)], window, lambda a, v: (a[0] + v[0],))
    fast = run(reduce_window_module("s32", dims, window, "add"), x, np.int32(1))
    general = run(reduce_window_module("s32", dims, window, sub_neg_reducer), x, np.int32(1))
    np.testing.assert_array_equal(fast, want)
    np.testing.assert_array_equal(general, want)
