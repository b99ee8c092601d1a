"""reduce: shape rules, reducer recognition, and interpreter results against NumPy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlort import dtypes
from hlort.builder import Builder
from hlort.errors import InvalidArgument, Unimplemented
from hlort.interpreter import evaluate
from hlort.ir.opcodes import Opcode
from hlort.ir.patterns import binary_reducer_opcode, variadic_reducer_opcodes
from hlort.ir.verifier import verify_module
from hlort.shape import TupleShape, array, scalar

NUMERIC = [
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


def reduce_module(dtype: str, dims_in, dims, opcode: str | Opcode = "add"):
    b = Builder("reduce")
    x = b.parameter(array(dtype, dims_in))
    init = b.parameter(scalar(dtype))
    module = b.build(b.reduce(x, init, b.scalar_computation(opcode, dtype), dims))
    verify_module(module)
    return module


def run(module, *args):
    return evaluate(module, list(args))


def custom_reducer(b: Builder, dtype: str, body, n: int = 1, name: str = "reducer"):
    """A reducer of n accumulators: body(sub, accs, xs) -> root instruction."""
    sub = b.sub(name)
    accs = [sub.parameter(scalar(dtype), f"acc{i}") for i in range(n)]
    xs = [sub.parameter(scalar(dtype), f"x{i}") for i in range(n)]
    return sub.finish(body(sub, accs, xs))


# -- shape rules --------------------------------------------------------------------------------


def test_shape_removes_reduced_dims():
    b = Builder("s")
    x = b.parameter(array("f32", [2, 3, 4]))
    r = b.reduce(x, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [0, 2])
    assert r.shape == array("f32", [3])


def test_shape_variadic_is_tuple_and_one_tuple_reducer_gives_tuple():
    b = Builder("s")
    x = b.parameter(array("f32", [2, 3]))
    i = b.parameter(array("s32", [2, 3]))
    comp = argmax_reducer(b)
    r = b.reduce([x, i], [b.constant(np.float32(0)), b.constant(np.int32(0))], comp, [1])
    assert r.shape == TupleShape((array("f32", [2]), array("s32", [2])))
    one = b.sub("one_tuple")
    p0, p1 = one.parameter(scalar("f32")), one.parameter(scalar("f32"))
    comp1 = one.finish(one.tuple([one.add(p0, p1)]))
    r1 = b.reduce(x, b.constant(np.float32(0)), comp1, [0])
    assert r1.shape == TupleShape((array("f32", [3]),))


@pytest.mark.parametrize(
    "case, message",
    [
        ("init_dtype", "element type of input 0"),
        ("init_rank", "must be a scalar"),
        ("dim_range", "out of range"),
        ("dim_repeat", "repeats"),
        ("params", "must have signature (f32[], f32[]) -> f32[], but it has (f32[]) -> f32[]"),
        ("result", "but it has (f32[], f32[]) -> pred[]"),
        ("inputs_dims", "must have the dims of input 0"),
        ("odd", "N inputs then N init values"),
    ],
)
def test_shape_rejects(case, message):
    b = Builder("s")
    x = b.parameter(array("f32", [2, 3]))
    zero = b.constant(np.float32(0))
    add = b.scalar_computation("add", "f32")
    with pytest.raises(InvalidArgument) as err:
        if case == "init_dtype":
            b.reduce(x, b.constant(np.int32(0)), add, [0])
        elif case == "init_rank":
            b.reduce(x, b.constant(np.zeros(2, np.float32)), add, [0])
        elif case == "dim_range":
            b.reduce(x, zero, add, [2])
        elif case == "dim_repeat":
            b.reduce(x, zero, add, [1, 1])
        elif case == "params":
            sub = b.sub("unary")
            sub.finish(sub.negate(sub.parameter(scalar("f32"))))
            b.reduce(x, zero, sub.computation, [0])
        elif case == "result":
            sub = b.sub("pred")
            p0, p1 = sub.parameter(scalar("f32")), sub.parameter(scalar("f32"))
            sub.finish(sub.compare(p0, p1, "LT"))
            b.reduce(x, zero, sub.computation, [0])
        elif case == "inputs_dims":
            y = b.parameter(array("f32", [3, 2]))
            sub = b.sub("two")
            ps = [sub.parameter(scalar("f32")) for _ in range(4)]
            sub.finish(sub.tuple([sub.add(ps[0], ps[2]), sub.add(ps[1], ps[3])]))
            b.reduce([x, y], [zero, zero], sub.computation, [0])
        else:
            b.op(Opcode.REDUCE, (x, zero, zero), dimensions=(0,), to_apply=add)
    assert message in str(err.value)


# -- reducer recognition ------------------------------------------------------------------------


def test_reducer_patterns():
    b = Builder("p")
    assert binary_reducer_opcode(b.scalar_computation("maximum", "f32")) is Opcode.MAXIMUM
    assert binary_reducer_opcode(b.scalar_computation("subtract", "f32")) is None
    assert variadic_reducer_opcodes(b.scalar_computation("and", "pred")) == (Opcode.AND,)

    def two_body(s, a, x):
        return s.tuple([s.add(x[0], a[0]), s.max(a[1], x[1])])

    def crossed_body(s, a, x):
        return s.tuple([s.add(a[0], x[1]), s.add(a[1], x[0])])

    two = custom_reducer(b, "f32", two_body, n=2)
    assert variadic_reducer_opcodes(two) == (Opcode.ADD, Opcode.MAXIMUM)
    crossed = custom_reducer(b, "f32", crossed_body, n=2)
    assert variadic_reducer_opcodes(crossed) is None
    assert variadic_reducer_opcodes(argmax_reducer(b)) is None


# -- interpreter: fast paths per dtype ----------------------------------------------------------


def _reference(op: str, x: np.ndarray, init, axes) -> np.ndarray:
    """NumPy reference in a wide type (float64 for floats), then rounded to the input type."""
    kind = np.dtype(x.dtype).kind
    wide = np.float64 if kind in "fV" else x.dtype
    ufunc = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}[
        op
    ]
    acc = ufunc.reduce(x.astype(wide), axis=axes, dtype=wide)
    return np.asarray(ufunc(np.asarray(init).astype(wide), acc)).astype(x.dtype)


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["add", "multiply", "maximum", "minimum"])
def test_fast_reducers_every_numeric_dtype(dtype, op):
    rng = np.random.default_rng(1)
    npd = _np(dtype)
    if npd.kind in "iu":
        x = rng.integers(0, 5 if op == "multiply" else 100, size=(3, 4, 5)).astype(npd)
        init = np.array(1 if op == "multiply" else 3).astype(npd)
    else:
        x = (rng.standard_normal((3, 4, 5)) * (1 if op == "multiply" else 4)).astype(npd)
        init = np.array(1 if op == "multiply" else 0.5).astype(npd)
    got = run(reduce_module(dtype, [3, 4, 5], [0, 2], op), x, init)
    want = _reference(op, x, init, (0, 2))
    assert got.dtype == npd and got.shape == (4,)
    if npd.kind in "iu" or op in ("maximum", "minimum"):
        np.testing.assert_array_equal(got, want)
    else:
        tol = {2: 2e-2, 1: 0.15}.get(npd.itemsize, 1e-5)
        np.testing.assert_allclose(
            got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol
        )


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_complex_add_and_multiply(dtype):
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))).astype(_np(dtype))
    init = np.array(1 + 2j).astype(_np(dtype))
    np.testing.assert_allclose(
        run(reduce_module(dtype, [4, 3], [0], "add"), x, init), init + x.sum(axis=0), rtol=1e-5
    )
    np.testing.assert_allclose(
        run(reduce_module(dtype, [4, 3], [0], "multiply"), x, init),
        init * x.prod(axis=0),
        rtol=1e-5,
    )


@pytest.mark.parametrize("dtype", ["pred", "u8", "s32", "u64"])
@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_logical_and_bitwise_reducers(dtype, op):
    rng = np.random.default_rng(3)
    npd = _np(dtype)
    x = rng.integers(0, 2 if dtype == "pred" else 256, size=(5, 6)).astype(npd)
    ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
    init = np.array(True if op == "and" else 0).astype(npd)
    if op == "and" and dtype != "pred":
        init = np.array(-1).astype(npd)
    got = run(reduce_module(dtype, [5, 6], [1], op), x, init)
    np.testing.assert_array_equal(got, ufunc(init, ufunc.reduce(x, axis=1)))


def test_pred_add_is_or_and_multiply_is_and():
    x = np.array([[True, False], [False, False]])
    f = np.array(False)
    np.testing.assert_array_equal(
        run(reduce_module("pred", [2, 2], [1], "add"), x, f), [True, False]
    )
    np.testing.assert_array_equal(
        run(reduce_module("pred", [2, 2], [1], "multiply"), x, np.array(True)), [False, False]
    )


def test_integer_sum_wraps():
    x = np.full((4,), 100, np.int8)
    assert run(reduce_module("s8", [4], [0]), x, np.int8(0)) == np.int8(-112)
    u = np.full((3,), 200, np.uint8)
    assert run(reduce_module("u8", [3], [0]), u, np.uint8(0)) == np.uint8(88)


def test_nan_propagates_through_max_and_min_and_inf_is_kept():
    x = np.array([[1.0, np.nan, 3.0], [-np.inf, 2.0, np.inf]], np.float32)
    init = np.float32(-np.inf)
    got = run(reduce_module("f32", [2, 3], [1], "maximum"), x, init)
    assert np.isnan(got[0]) and got[1] == np.inf
    got = run(reduce_module("f32", [2, 3], [1], "minimum"), x, np.float32(np.inf))
    assert np.isnan(got[0]) and got[1] == -np.inf
    assert np.isnan(run(reduce_module("f32", [2, 3], [0, 1]), x, np.float32(0)))


def test_negative_zero_sums():
    x = np.array([-0.0, -0.0], np.float32)
    got = run(reduce_module("f32", [2], [0]), x, np.float32(-0.0))
    assert got == 0 and np.signbit(got)
    got = run(reduce_module("f32", [2], [0]), x, np.float32(0.0))
    assert got == 0 and not np.signbit(got)


@pytest.mark.parametrize("dtype", ["f32", "f64", "f16", "bf16"])
def test_max_min_order_signed_zeros_like_the_elementwise_ops(dtype):
    """Regression: np.maximum.reduce kept whichever zero came first; HLO max(-0, +0) is +0."""
    dt = _np(dtype)
    rows = np.array([[0.0, -0.0], [-0.0, 0.0], [-0.0, -0.0], [0.0, 0.0]], dt)
    neg_inf, pos_inf = np.array(-np.inf, dt), np.array(np.inf, dt)
    got = run(reduce_module(dtype, [4, 2], [1], "maximum"), rows, neg_inf)
    np.testing.assert_array_equal(np.signbit(got), [False, False, True, False])
    got = run(reduce_module(dtype, [4, 2], [1], "minimum"), rows, pos_inf)
    np.testing.assert_array_equal(np.signbit(got), [True, True, True, False])
    # the init value takes part too
    got = run(reduce_module(dtype, [2], [0], "maximum"), rows[2], np.array(0.0, dt))
    assert got == 0 and not np.signbit(got)
    got = run(reduce_module(dtype, [2], [0], "minimum"), rows[3], np.array(-0.0, dt))
    assert got == 0 and np.signbit(got)


@pytest.mark.parametrize("op, init", [("add", 7), ("maximum", -3), ("multiply", 2)])
def test_empty_reduced_dims_give_init(op, init):
    x = np.zeros((3, 0, 2), np.int32)
    got = run(reduce_module("s32", [3, 0, 2], [1], op), x, np.int32(init))
    np.testing.assert_array_equal(got, np.full((3, 2), init, np.int32))
    got = run(reduce_module("s32", [3, 0, 2], [0, 1, 2], op), x, np.int32(init))
    assert got.shape == () and got == init


def test_empty_kept_dims_give_empty_result():
    x = np.zeros((0, 4), np.float32)
    got = run(reduce_module("f32", [0, 4], [1]), x, np.float32(1))
    assert got.shape == (0,) and got.dtype == np.float32


def test_scalar_operand_with_no_reduced_dims_applies_reducer_once():
    got = run(reduce_module("f32", [], []), np.float32(2.5), np.float32(1.0))
    assert got.shape == () and got == 3.5
    got = run(
        reduce_module("s32", [2, 2], []), np.arange(4, dtype=np.int32).reshape(2, 2), np.int32(10)
    )
    np.testing.assert_array_equal(got, np.arange(4).reshape(2, 2) + 10)


def test_reduction_order_is_row_major_over_reduced_dims():
    # order of the flattened reduced dims does not depend on the order they are listed
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for dims in ([0, 2], [2, 0]):
        got = run(reduce_module("f32", [2, 3, 4], dims), x, np.float32(0))
        np.testing.assert_array_equal(got, x.sum(axis=(0, 2)))


# -- interpreter: general (tree) reducers --------------------------------------------------------


def general_module(dtype: str, dims_in, dims, body):
    b = Builder("reduce")
    x = b.parameter(array(dtype, dims_in))
    init = b.parameter(scalar(dtype))
    comp = custom_reducer(b, dtype, lambda s, a, xs: body(s, a[0], xs[0]))
    assert variadic_reducer_opcodes(comp) is None
    return b.build(b.reduce(x, init, comp, dims))


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 33])
def test_general_reducer_keeps_element_order(n):
    x = np.arange(2 * n, dtype=np.int32).reshape(2, n) + 1
    last = general_module("s32", [2, n], [1], lambda s, acc, v: v)
    np.testing.assert_array_equal(run(last, x, np.int32(-1)), x[:, -1])
    first_nonzero = general_module(
        "s32",
        [2, n],
        [1],
        lambda s, acc, v: s.select(s.compare(acc, s.constant(np.int32(0)), "NE"), acc, v),
    )
    np.testing.assert_array_equal(run(first_nonzero, x, np.int32(0)), x[:, 0])
    np.testing.assert_array_equal(run(first_nonzero, x, np.int32(9)), [9, 9])


def test_general_reducer_matches_fast_path_for_integers():
    rng = np.random.default_rng(4)
    x = rng.integers(-1000, 1000, size=(4, 5, 6)).astype(np.int32)
    plus = general_module("s32", [4, 5, 6], [0, 2], lambda s, acc, v: s.subtract(acc, s.negate(v)))
    select_max = general_module(
        "s32", [4, 5, 6], [1], lambda s, acc, v: s.select(s.compare(acc, v, "GT"), acc, v)
    )
    np.testing.assert_array_equal(run(plus, x, np.int32(5)), x.sum(axis=(0, 2)) + 5)
    np.testing.assert_array_equal(run(select_max, x, np.int32(-5000)), x.max(axis=1))
    empty = np.zeros((4, 0, 6), np.int32)
    select_max0 = general_module(
        "s32", [4, 0, 6], [1], lambda s, acc, v: s.select(s.compare(acc, v, "GT"), acc, v)
    )
    np.testing.assert_array_equal(run(select_max0, empty, np.int32(3)), np.full((4, 6), 3))


def test_general_reducer_in_bf16():
    x = np.linspace(-2, 2, 12).astype(ml_dtypes.bfloat16).reshape(3, 4)
    plus = general_module("bf16", [3, 4], [1], lambda s, acc, v: s.subtract(acc, s.negate(v)))
    got = run(plus, x, np.array(0).astype(ml_dtypes.bfloat16))
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(got.astype(np.float32), x.astype(np.float32).sum(1), atol=0.05)


def argmax_reducer(b: Builder):
    """JAX's argmax reducer: (value, index) pairs; NaN wins, ties keep the lower index."""
    sub = b.sub("argmax")
    av, ai = sub.parameter(scalar("f32")), sub.parameter(scalar("s32"))
    xv, xi = sub.parameter(scalar("f32")), sub.parameter(scalar("s32"))
    pick_a = sub.or_(sub.compare(av, xv, "GT"), sub.compare(av, av, "NE"))
    pick_a_index = sub.or_(pick_a, sub.and_(sub.compare(av, xv, "EQ"), sub.compare(ai, xi, "LT")))
    return sub.finish(sub.tuple([sub.select(pick_a, av, xv), sub.select(pick_a_index, ai, xi)]))


def argmax_module(rows: int, n: int):
    b = Builder("argmax")
    x = b.parameter(array("f32", [rows, n]))
    idx = b.iota(array("s32", [rows, n]), 1)
    inits = [b.constant(np.float32(-np.inf)), b.constant(np.int32(0))]
    out = b.reduce([x, idx], inits, argmax_reducer(b), [1])
    return b.build(b.get_tuple_element(out, 1))


def test_variadic_argmax_matches_numpy_with_ties_and_nans():
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, size=(6, 11)).astype(np.float32)  # many ties
    x[2, 5] = np.nan
    x[2, 8] = np.nan
    x[3, :] = -np.inf
    got = run(argmax_module(6, 11), x)
    np.testing.assert_array_equal(got, np.argmax(x, axis=1).astype(np.int32))


def test_variadic_reduce_returns_tuple_of_both_results():
    b = Builder("minmax")
    x = b.parameter(array("f32", [3, 4]))

    def body(s, a, xs):
        return s.tuple([s.min(a[0], xs[0]), s.max(a[1], xs[1])])

    comp = custom_reducer(b, "f32", body, n=2)
    inits = [b.constant(np.float32(np.inf)), b.constant(np.float32(-np.inf))]
    module = b.build(b.reduce([x, x], inits, comp, [1]))
    v = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    lo, hi = run(module, v)
    np.testing.assert_array_equal(lo, v.min(1))
    np.testing.assert_array_equal(hi, v.max(1))


# -- property tests -----------------------------------------------------------------------------


@st.composite
def reduce_cases(draw):
    rank = draw(st.integers(0, 3))
    dims_in = draw(st.lists(st.integers(0, 5), min_size=rank, max_size=rank))
    dims = sorted(draw(st.sets(st.integers(0, rank - 1), max_size=rank))) if rank else []
    dtype = draw(st.sampled_from(["s32", "u8", "f32", "f64"]))
    op = draw(st.sampled_from(["add", "maximum", "minimum", "multiply"]))
    seed = draw(st.integers(0, 2**32 - 1))
    return dims_in, dims, dtype, op, seed


@settings(max_examples=60, deadline=None)
@given(reduce_cases())
def test_property_reduce_matches_numpy(case):
    dims_in, dims, dtype, op, seed = case
    rng = np.random.default_rng(seed)
    npd = _np(dtype)
    x = rng.integers(0, 4, size=dims_in).astype(npd)
    init = np.array(1 if op == "multiply" else 2).astype(npd)
    got = run(reduce_module(dtype, dims_in, dims, op), x, init)
    fn = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum}[op]
    want = fn.reduce(x, axis=tuple(dims), initial=init, dtype=npd) if dims else fn(init, x)
    np.testing.assert_allclose(got, np.asarray(want).astype(npd), rtol=1e-6)


@settings(max_examples=40, deadline=None)
@given(reduce_cases())
def test_property_general_reducer_matches_numpy(case):
    dims_in, dims, _, _, seed = case
    x = np.random.default_rng(seed).integers(-50, 50, size=dims_in).astype(np.int64)
    module = general_module("s64", dims_in, dims, lambda s, acc, v: s.subtract(acc, s.negate(v)))
    want = x.sum(axis=tuple(dims)) + 3 if dims else x + 3
    np.testing.assert_array_equal(run(module, x, np.int64(3)), want)


def test_reducer_with_shape_ops_is_right_or_unimplemented():
    """A reducer that reshapes a parameter cannot run on whole arrays: a clear UNIMPLEMENTED,
    never a wrong answer."""
    module = general_module("s32", [3, 4], [1], lambda s, acc, v: s.add(acc, s.reshape(v, [])))
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    try:
        got = run(module, x, np.int32(0))
    except Unimplemented as err:
        assert "cannot be applied to whole arrays" in str(err)
    else:
        np.testing.assert_array_equal(got, x.sum(1))
