"""Compiled reduce-window and select-and-scatter on cpu vs the interpreter.

Both kernels fold each window in row-major order from the init value, skipping padding and
base-dilation holes, as the interpreter (and XLA) do; select-and-scatter combines into the
output in the order of the windows, as the interpreter does. So every result must match bit for
bit, float sums included (narrow floats round after every step on both sides); the only
tolerance is NaN payloads (any NaN matches any NaN, as the conformance suite's "exact" rule).
Every case asserts that nothing ran on the interpreter FALLBACK.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.errors import HlortError  # noqa: E402
from hlort.interpreter.ops.reduce_window import output_dims  # noqa: E402
from hlort.ir.attributes import WindowDim  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402

FLOATS = ["f16", "bf16", "f32", "f64"]
INTS = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]


def salted(dt: str, dims, rng) -> np.ndarray:
    """Random values of ``dt`` with its edge values (NaN, +-inf, -0.0, extremes) shuffled in."""
    flat = mixed(dtypes.from_hlo_name(dt), tuple(dims), rng).reshape(-1)
    return rng.permutation(flat).reshape(dims)


def small_ints(dt: str, dims, rng) -> np.ndarray:
    """Values with many ties (integers in [0, 4)), to pin down which of equal elements wins."""
    return rng.integers(0, 4, size=dims).astype(np.dtype(dtypes.from_hlo_name(dt).numpy))


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    """Bit for bit, except that any NaN matches any NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype.kind == "c":  # part by part
        part = np.float32 if got.dtype == np.complex64 else np.float64
        got, want = (np.ascontiguousarray(a).reshape(-1).view(part) for a in (got, want))
    if got.dtype.kind != "f" and got.dtype.name != "bfloat16":
        np.testing.assert_array_equal(got, want)
        return
    bits = f"u{got.dtype.itemsize}"
    g_nan, w_nan = np.isnan(got.astype(np.float64)), np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(g_nan, w_nan)
    np.testing.assert_array_equal(got.view(bits)[~g_nan], want.view(bits)[~w_nan])


def check(module, args) -> dict:
    """Compile on cpu, require no FALLBACK, compare every output with the interpreter."""
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    want = hlort.evaluate(module, args)
    got = exe(*args)
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    gots = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants, strict=True):
        assert_same(np.asarray(g), np.asarray(w))
    return stats


def windows(sizes, strides=None, padding=None, window_dilation=None, base_dilation=None):
    rank = len(sizes)
    strides = strides or [1] * rank
    padding = padding or [(0, 0)] * rank
    wd = window_dilation or [1] * rank
    bd = base_dilation or [1] * rank
    return [
        WindowDim(s, st, lo, hi, w, d)
        for s, st, (lo, hi), w, d in zip(sizes, strides, padding, wd, bd, strict=True)
    ]


def init_for(op: str, dt: str):
    np_dt = np.dtype(dtypes.from_hlo_name(dt).numpy)
    if op in ("add", "or", "xor"):
        return np.zeros((), np_dt)
    if op in ("multiply",):
        return np.ones((), np_dt)
    low = op == "maximum"
    if np_dt == np.bool_:
        return np.array(not low)
    if np_dt.kind in "iu":
        info = np.iinfo(np_dt)
        return np.array(info.min if low else info.max, np_dt)
    return np.array(-np.inf if low else np.inf).astype(np_dt)


def reducer(b: Builder, op: str, dt: str):
    if op == "custom":  # a * 0.5 + b: order-sensitive, not a plain reducer
        sub = b.sub(f"custom_{dt}")
        a, x = sub.parameter(shape.scalar(dt)), sub.parameter(shape.scalar(dt))
        half = sub.constant(np.array(0.5, dtypes.from_hlo_name(dt).numpy))
        return b._comp(sub.finish(sub.add(sub.multiply(a, half), x)))
    return b.scalar_computation(op, dt)


def reduce_window_module(dt, dims, op, window, init=None, producer=None):
    b = Builder("reduce_window")
    x = b.parameter(shape.array(dt, dims))
    value = producer(b, x) if producer is not None else x
    start = init if init is not None else init_for("add" if op == "custom" else op, dt)
    r = b.reduce_window(value, b.constant(start), reducer(b, op, dt), window)
    return b.build(r)


# -- reduce-window --------------------------------------------------------------------------------
SAME_3X3_S2 = windows([1, 3, 3, 1], [1, 2, 2, 1], [(0, 0), (1, 1), (1, 1), (0, 0)])


@pytest.mark.parametrize("dt", FLOATS + INTS)
def test_max_pool_nhwc_same_padding(dt):
    """Max-pool 3x3 stride 2 SAME on NHWC: the vectorized row form (channels innermost)."""
    rng = np.random.default_rng(1)
    module = reduce_window_module(dt, (2, 9, 8, 5), "maximum", SAME_3X3_S2)
    stats = check(module, [salted(dt, (2, 9, 8, 5), rng)])
    assert stats["compiled"] == {"reduce-window": 1}


@pytest.mark.parametrize("dt", ["f32", "bf16", "s32"])
def test_pools_nchw_with_window_dilation(dt):
    """Windows along the last dimension: the per-element form."""
    rng = np.random.default_rng(2)
    window = windows([1, 1, 2, 3], [1, 1, 2, 1], [(0, 0), (0, 0), (0, 1), (2, 1)], [1, 1, 1, 2])
    for op in ("maximum", "minimum", "add"):
        module = reduce_window_module(dt, (2, 3, 7, 6), op, window)
        check(module, [salted(dt, (2, 3, 7, 6), rng)])


@pytest.mark.parametrize("dt", FLOATS)
def test_avg_pool_sum_then_divide(dt):
    """JAX's avg_pool: a window sum (with padding) divided by the window size."""
    rng = np.random.default_rng(3)
    b = Builder("avg_pool")
    x = b.parameter(shape.array(dt, (2, 6, 6, 3)))
    zero = b.constant(init_for("add", dt))
    s = b.reduce_window(x, zero, b.scalar_computation("add", dt), SAME_3X3_S2)
    nine = b.broadcast(b.constant(np.array(9, dtypes.from_hlo_name(dt).numpy)), s.shape.dims, [])
    module = b.build(b.divide(s, nine))
    check(module, [salted(dt, (2, 6, 6, 3), rng)])


@pytest.mark.parametrize("dt", ["s32", "u8", "f16", "bf16", "f32", "f64"])
def test_cumulative_sums(dt):
    """cumsum / reverse cumsum / cummax as reduce-windows (window n, padding n - 1)."""
    rng = np.random.default_rng(4)
    n = 37
    for lo, hi in ((n - 1, 0), (0, n - 1)):
        for op in ("add", "maximum"):
            module = reduce_window_module(dt, (n,), op, windows([n], padding=[(lo, hi)]))
            check(module, [salted(dt, (n,), rng)])
    along_rows = windows([1, n], padding=[(0, 0), (n - 1, 0)])
    module = reduce_window_module(dt, (4, n), "add", along_rows)
    check(module, [salted(dt, (4, n), rng)])
    along_columns = windows([n, 1], padding=[(n - 1, 0), (0, 0)])
    module = reduce_window_module(dt, (n, 6), "add", along_columns)
    check(module, [salted(dt, (n, 6), rng)])


def test_long_rows_split_into_tiles():
    """Rows longer than a tile (1024 outputs): each tile folds its own stretch of the row."""
    rng = np.random.default_rng(18)
    window = windows([2, 5], [1, 2], [(1, 0), (3, 4)], [1, 3], [1, 2])
    module = reduce_window_module("f32", (3, 2600), "add", window)
    check(module, [salted("f32", (3, 2600), rng)])
    n = 2500
    module = reduce_window_module("s32", (n,), "add", windows([n], padding=[(n - 1, 0)]))
    check(module, [salted("s32", (n,), rng)])


def test_pred_reduce_window():
    rng = np.random.default_rng(5)
    for op in ("or", "and", "xor", "maximum"):
        module = reduce_window_module("pred", (5, 6), op, windows([2, 3], [1, 2], [(1, 0), (0, 2)]))
        check(module, [rng.integers(0, 2, size=(5, 6)).astype(bool)])


def test_base_dilation_and_negative_padding():
    rng = np.random.default_rng(6)
    window = windows([2, 3], [1, 2], [(-1, 2), (3, -2)], [1, 2], [2, 3])
    for dt, op in (("f32", "maximum"), ("f32", "add"), ("s64", "multiply"), ("bf16", "add")):
        module = reduce_window_module(dt, (6, 7), op, window)
        check(module, [salted(dt, (6, 7), rng)])


def test_init_that_is_not_the_identity_skips_padding():
    """Padding is not an element (XLA): with init 3, a window of only padding gives 3 and a
    padded border window adds 3 once, not once per padding position."""
    rng = np.random.default_rng(7)
    window = windows([3, 3], [1, 1], [(3, 1), (2, 2)])
    for dt, op, init in (("f32", "add", 3.0), ("f32", "maximum", 0.5), ("s32", "add", 3)):
        start = np.array(init, dtypes.from_hlo_name(dt).numpy)
        module = reduce_window_module(dt, (4, 5), op, window, init=start)
        check(module, [salted(dt, (4, 5), rng)])


def test_producers_fuse_into_the_reduce_window_kernel():
    """The fusion pass makes a kInput fusion of abs(x) * x + 1 feeding the window sum; the
    producers are evaluated per window position inside the one kernel."""
    rng = np.random.default_rng(8)

    def producer(b, x):
        one = b.broadcast(b.constant(np.float32(1)), x.shape.dims, [])
        return b.add(b.multiply(b.abs(x), x), one)

    for window in (SAME_3X3_S2, windows([1, 2, 2, 2], [1, 1, 2, 1])):
        module = reduce_window_module("f32", (2, 6, 6, 4), "add", window, producer=producer)
        stats = check(module, [salted("f32", (2, 6, 6, 4), rng)])
        assert stats["compiled"] == {"fusion(kInput)": 1}, stats


def test_transcendental_producer_within_exp_tolerance():
    """exp is emitted as a polynomial within 4 ulp of NumPy's (the conformance rule for
    transcendentals), so a window sum of exp(x) (positive terms, same order) is within
    rtol 4 * 2**-23 of the interpreter. The fusion pass keeps exp out of the window (it would be
    recomputed for every window that reads it): two kernels, no FALLBACK."""
    rng = np.random.default_rng(17)
    module = reduce_window_module(
        "f32", (2, 6, 6, 4), "add", SAME_3X3_S2, producer=lambda b, x: b.exp(x)
    )
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled"]["reduce-window"] == 1, stats
    x = rng.standard_normal((2, 6, 6, 4)).astype(np.float32)
    np.testing.assert_allclose(exe(x), hlort.evaluate(module, [x]), rtol=4 * 2.0**-23, atol=0)


@pytest.mark.parametrize("dt", ["f16", "f32", "f64"])
def test_custom_order_sensitive_reducer(dt):
    rng = np.random.default_rng(9)
    module = reduce_window_module(
        dt, (3, 8, 4), "custom", windows([1, 3, 2], [1, 2, 1], [(0, 0), (1, 1), (0, 0)])
    )
    check(module, [salted(dt, (3, 8, 4), rng)])


def test_variadic_argmax_reduce_window():
    """(value, index) pairs reduced together: the pooled maximum and where it is."""
    rng = np.random.default_rng(10)
    b = Builder("argmax_pool")
    sub = b.sub("argmax")
    av, ai = sub.parameter(shape.scalar("f32")), sub.parameter(shape.scalar("s32"))
    bv, bi = sub.parameter(shape.scalar("f32")), sub.parameter(shape.scalar("s32"))
    take = sub.or_(
        sub.compare(bv, av, "GT"), sub.and_(sub.compare(bv, av, "EQ"), sub.compare(bi, ai, "LT"))
    )
    comp = b._comp(sub.finish(sub.tuple([sub.select(take, bv, av), sub.select(take, bi, ai)])))
    x = b.parameter(shape.array("f32", (3, 7, 4)))
    idx = b.parameter(shape.array("s32", (3, 7, 4)))
    window = windows([1, 3, 1], [1, 2, 1], [(0, 0), (1, 1), (0, 0)])
    r = b.reduce_window(
        [x, idx], [b.constant(np.float32(-np.inf)), b.constant(np.int32(-1))], comp, window
    )
    module = b.build(r)
    args = [small_ints("f32", (3, 7, 4), rng), np.arange(84, dtype=np.int32).reshape(3, 7, 4)]
    check(module, args)
    window = windows([2, 3, 2], [1, 1, 1], [(0, 0), (1, 1), (1, 0)])
    b2 = Builder("independent_pair")
    x, y = b2.parameter(shape.array("f32", (3, 5, 4))), b2.parameter(shape.array("s16", (3, 5, 4)))
    sub = b2.sub("pair")
    p = [sub.parameter(shape.scalar(t)) for t in ("f32", "s16", "f32", "s16")]
    pair = b2._comp(sub.finish(sub.tuple([sub.add(p[0], p[2]), sub.maximum(p[1], p[3])])))
    r = b2.reduce_window(
        [x, y], [b2.constant(np.float32(0)), b2.constant(np.int16(-5))], pair, window
    )
    module = b2.build(r)
    check(module, [salted("f32", (3, 5, 4), rng), salted("s16", (3, 5, 4), rng)])


@pytest.mark.parametrize("dt", ["c64", "c128"])
@pytest.mark.parametrize("op", ["add", "multiply", "custom"])
def test_complex_reduce_windows(dt, op):
    """Complex sums and products fold in window order from the init and skip padding (no
    identity multiplied in: (inf + 0i) * (1 + 0i) would be NaN); windows of -0.0 - 0.0i keep
    both zero signs; an empty operand gives an empty result."""
    rng = np.random.default_rng(20)
    window = windows([2, 3], [1, 2], [(1, 0), (1, 1)], [1, 1], [1, 2])
    module = reduce_window_module(dt, (5, 6), op, window)
    stats = check(module, [salted(dt, (5, 6), rng)])
    assert stats["compiled"] == {"reduce-window": 1}
    negative_zero = np.array(complex(-0.0, -0.0), dtypes.from_hlo_name(dt).numpy)
    module = reduce_window_module(dt, (5, 6), "add", window, init=negative_zero)
    check(module, [np.full((5, 6), negative_zero)])
    module = reduce_window_module(dt, (0, 6), op, window)
    check(module, [np.zeros((0, 6), negative_zero.dtype)])


@pytest.mark.parametrize("dt", ["c64", "c128"])
@pytest.mark.parametrize("scatter", ["add", "multiply"])
def test_complex_select_and_scatter(dt, scatter):
    """Select on the real parts (complex values only compare for equality), scatter complex
    sources into the selections in window order."""
    rng = np.random.default_rng(21)
    b = Builder("complex_sas")
    sub = b.sub("real_ge")
    x, y = sub.parameter(shape.scalar(dt)), sub.parameter(shape.scalar(dt))
    select = b._comp(sub.finish(sub.compare(sub.real(x), sub.real(y), "GE")))
    window = windows([3, 2], [2, 1], [(1, 1), (0, 1)])
    operand = b.parameter(shape.array(dt, (6, 5)))
    source = b.parameter(shape.array(dt, output_dims((6, 5), window)))
    start = b.constant(init_for(scatter, dt))
    module = b.build(
        b.select_and_scatter(operand, select, window, source, start, reducer(b, scatter, dt))
    )
    values = salted(dt, (6, 5), rng)
    values.real[::2] = 1.0  # ties: the first wins
    stats = check(module, [values, salted(dt, output_dims((6, 5), window), rng)])
    assert stats["compiled"] == {"select-and-scatter": 1}


def test_empty_and_scalar_shapes():
    rng = np.random.default_rng(11)
    module = reduce_window_module("f32", (0, 4), "add", windows([1, 2]))
    check(module, [np.zeros((0, 4), np.float32)])
    padded_empty = windows([1, 2], padding=[(1, 1), (0, 0)])
    module = reduce_window_module("f32", (0, 4), "maximum", padded_empty, init=np.float32(2.5))
    check(module, [np.zeros((0, 4), np.float32)])
    module = reduce_window_module("s32", (3, 2), "add", windows([4, 1]))
    check(module, [salted("s32", (3, 2), rng)])
    module = reduce_window_module("f32", (), "add", [], init=np.float32(1.5))
    check(module, [np.array(-0.25, np.float32)])


def random_window(rng, rank):
    out = []
    for _ in range(rank):
        size = int(rng.integers(1, 4))
        out.append(
            WindowDim(
                size,
                int(rng.integers(1, 3)),
                int(rng.integers(-1, 3)),
                int(rng.integers(-1, 3)),
                int(rng.integers(1, 3)),
                int(rng.integers(1, 3)),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(30))
def test_reduce_window_random_windows(seed):
    rng = np.random.default_rng(300 + seed)
    rank = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 7, size=rank))
    dt = (FLOATS + INTS)[seed % 12]
    op = ["add", "maximum", "minimum", "custom" if dt in FLOATS else "multiply"][seed % 4]
    try:
        module = reduce_window_module(dt, dims, op, random_window(rng, rank))
    except HlortError:
        pytest.skip("the shape rules reject this window")
    check(module, [salted(dt, dims, rng)])


# -- select-and-scatter ---------------------------------------------------------------------------
def select_comp(b: Builder, dt: str, direction: str, total_order: bool = False):
    sub = b.sub(f"select_{direction}_{dt}")
    x, y = sub.parameter(shape.scalar(dt)), sub.parameter(shape.scalar(dt))
    kind = "TOTALORDER" if total_order else None
    return b._comp(sub.finish(sub.compare(x, y, direction, kind)))


def select_and_scatter_module(
    dt, dims, window, direction="GE", scatter="add", init=None, total_order=False
):
    b = Builder("select_and_scatter")
    x = b.parameter(shape.array(dt, dims))
    source = b.parameter(shape.array(dt, output_dims(dims, window)))
    start = b.constant(init if init is not None else init_for("add", dt))
    r = b.select_and_scatter(
        x,
        select_comp(b, dt, direction, total_order),
        window,
        source,
        start,
        reducer(b, scatter, dt),
    )
    return b.build(r)


def sas_args(module, rng, values=salted):
    x, source = (p.shape for p in module.entry.parameters)
    dt = x.dtype.name
    return [values(dt, x.dims, rng), salted(dt, source.dims, rng)]


@pytest.mark.parametrize("dt", FLOATS + ["s32", "u8", "s64"])
def test_max_pool_gradient_overlapping_windows(dt):
    """The gradient of a 3x3 stride-2 SAME max-pool: overlapping windows, ties first-wins."""
    rng = np.random.default_rng(12)
    module = select_and_scatter_module(dt, (2, 7, 9, 3), SAME_3X3_S2)
    stats = check(module, sas_args(module, rng, small_ints))
    assert stats["compiled"] == {"select-and-scatter": 1}
    check(module, sas_args(module, rng))


def test_pool_gradient_with_many_channels():
    """More channels than one side-by-side tile (256), and a partial last tile."""
    rng = np.random.default_rng(19)
    window = windows([1, 2, 3, 1], [1, 2, 1, 1], [(0, 0), (0, 1), (1, 1), (0, 0)])
    module = select_and_scatter_module("f32", (2, 5, 4, 300), window)
    check(module, sas_args(module, rng, small_ints))


@pytest.mark.parametrize("dt", ["f32", "bf16", "s16"])
def test_min_pool_gradient_and_other_scatters(dt):
    rng = np.random.default_rng(13)
    window = windows([2, 2], [2, 2])
    for direction, scatter in (("LE", "add"), ("GT", "maximum"), ("GE", "custom")):
        if scatter == "custom" and dt == "s16":
            continue
        module = select_and_scatter_module(dt, (6, 8), window, direction, scatter)
        check(module, sas_args(module, rng, small_ints))
        check(module, sas_args(module, rng))


def test_total_order_select_and_nan():
    rng = np.random.default_rng(14)
    window = windows([3, 2], [1, 2], [(1, 1), (0, 1)])
    for total in (False, True):
        module = select_and_scatter_module("f32", (5, 6), window, total_order=total)
        check(module, sas_args(module, rng))


def test_windows_of_only_padding_select_nothing():
    rng = np.random.default_rng(15)
    window = windows([2, 2], [1, 1], [(3, 0), (0, 3)])
    module = select_and_scatter_module("f32", (3, 3), window, init=np.float32(7))
    check(module, sas_args(module, rng))


def test_select_and_scatter_empty_shapes():
    rng = np.random.default_rng(16)
    module = select_and_scatter_module("f32", (2, 2), windows([3, 1]))
    check(module, sas_args(module, rng))
    module = select_and_scatter_module("s32", (0, 4), windows([1, 2]))
    check(module, sas_args(module, rng))


@pytest.mark.parametrize("seed", range(20))
def test_select_and_scatter_random_windows(seed):
    rng = np.random.default_rng(400 + seed)
    rank = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 7, size=rank))
    dt = ["f32", "s32", "bf16", "u16", "f64"][seed % 5]
    window = [
        WindowDim(w.size, w.stride, w.padding_low, w.padding_high) for w in random_window(rng, rank)
    ]
    try:
        module = select_and_scatter_module(dt, dims, window, ["GE", "LE"][seed % 2])
    except HlortError:
        pytest.skip("the shape rules reject this window")
    check(module, sas_args(module, rng, small_ints if seed % 3 else salted))
