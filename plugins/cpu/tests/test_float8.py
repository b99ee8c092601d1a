"""float8 (f8E4M3FN, f8E5M2) on the cpu backend vs the reference interpreter.

Conversions, exactly rounded elementwise ops (+ - * / rem, min/max, compare, select, clamp,
abs/neg/sign, rounding, reduce-precision, bitcast) and data movement must match the interpreter
bit for bit, NaN bit patterns included, and run without an interpreter FALLBACK. Exhaustive
where it is cheap: every bit pattern of each float8 type, every pair of patterns for binary ops,
every f16/bf16/8- and 16-bit integer pattern into float8.

Transcendentals are computed in f32 by the emitter (a few f32 ulps) and in f64 by the
interpreter, then both round to float8: results may differ by at most one float8 ulp
(adjacent bit patterns), and only rarely (the measured count is bounded below).

64-bit integers convert rounding once (never through a rounded f64), column reductions
accumulate in f32 and round once as row reductions do, and an f8E5M2 NaN with a non-canonical
payload (0x7D, 0x7F, 0xFD, 0xFF) keeps it wherever the interpreter keeps it (data movement,
select, copy, bitcast-convert, reduce-precision, TOTALORDER compares) and becomes the canonical
NaN of its sign wherever the interpreter's arithmetic makes it so.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from float8_helpers import (  # noqa: E402
    ALL_PATTERNS,
    E5M2_PAYLOAD_NANS,
    F8,
    F8_IDS,
    as_bits,
    assert_bits_equal,
    float8_patterns,
    is_nan,
    run_on_cpu,
    unary_module,
)

from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402


# -- elementwise ----------------------------------------------------------------------------------
def _all_pairs(f8: dtypes.DType) -> tuple[np.ndarray, np.ndarray]:
    x, y = np.meshgrid(ALL_PATTERNS, ALL_PATTERNS, indexing="ij")
    return x.reshape(-1).view(f8.numpy), y.reshape(-1).view(f8.numpy)


def _binary(op: Opcode, dt: dtypes.DType, n: int, **attrs):
    b = Builder(op.value.replace("-", "_"))
    x = b.parameter(shape.array(dt, [n]))
    y = b.parameter(shape.array(dt, [n]))
    return b.build(b.op(op, (x, y), **attrs))


EXACT_BINARY = [
    Opcode.ADD,
    Opcode.SUBTRACT,
    Opcode.MULTIPLY,
    Opcode.DIVIDE,
    Opcode.REMAINDER,
    Opcode.MAXIMUM,
    Opcode.MINIMUM,
]


@pytest.mark.parametrize("op", EXACT_BINARY, ids=lambda o: o.value)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_exact_binary_ops_on_every_pair(f8, op):
    """f32 has room for one correctly rounded float8 result (24 >= 2p + 2 bits)."""
    x, y = _all_pairs(f8)
    got, want = run_on_cpu(_binary(op, f8, x.size), x, y)
    assert_bits_equal(got, want, [x, y], nan_operands=[x, y])


@pytest.mark.parametrize("direction", ["EQ", "NE", "LT", "LE", "GT", "GE"])
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_compare_on_every_pair(f8, direction):
    x, y = _all_pairs(f8)
    b = Builder("cmp")
    p, q = (b.parameter(shape.array(f8, [x.size])) for _ in range(2))
    module = b.build(
        b.tuple([b.compare(p, q, direction), b.compare(p, q, direction, "TOTALORDER")])
    )
    # f8E5M2 TOTALORDER orders NaN payloads too, which registers keep
    got, want = run_on_cpu(module, x, y)
    assert_bits_equal(got[0], want[0], [x, y])
    assert_bits_equal(got[1], want[1], [x, y])


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_select_and_clamp_on_every_pair(f8):
    """select keeps payload NaNs (the interpreter's np.where does); clamp makes them canonical
    (the interpreter computes it in f32)."""
    x, y = _all_pairs(f8)
    pick = np.random.default_rng(3).integers(0, 2, x.size).astype(bool)
    b = Builder("sel")
    c = b.parameter(shape.array(dtypes.PRED, [x.size]))
    p, q = (b.parameter(shape.array(f8, [x.size])) for _ in range(2))
    hi = b.broadcast(b.constant(np.array(100, f8.numpy)), [x.size], [])
    module = b.build(b.tuple([b.select(c, p, q), b.clamp(q, p, hi)]))
    got, want = run_on_cpu(module, pick, x, y)
    assert_bits_equal(got[0], want[0], [x, y])
    assert_bits_equal(got[1], want[1], [x, y], nan_operands=[x, y])


def test_e5m2_payload_nans_survive_movement_and_not_arithmetic():
    """Moved, selected, copied, reshaped, padded or constant payload NaNs keep their bits in a
    fused loop; arithmetic, max and conversions to other types make the canonical NaN."""
    e5m2 = dtypes.F8E5M2
    x = np.resize(np.concatenate([E5M2_PAYLOAD_NANS, [0x7E, 0xFE, 0x3C, 0x80]]), 32)
    x = x.astype(np.uint8).view(e5m2.numpy)
    nan = np.array([0xFD], np.uint8).view(e5m2.numpy)
    b = Builder("payload")
    p = b.parameter(shape.array(e5m2, [32]))
    c = b.parameter(shape.array(dtypes.PRED, [32]))
    m = b.reshape(p, [4, 8])
    moved = b.concatenate([b.reverse(b.transpose(m, [1, 0]), [0]), b.slice(m, [0, 4], [4, 8])], 0)
    padded = b.pad(moved, b.constant(nan.reshape(())), [(1, 0, 0), (0, 1, 1)])
    chosen = b.select(c, p, b.broadcast(b.constant(nan.reshape(())), [32], []))
    one = b.broadcast(b.constant(np.array(1, e5m2.numpy)), [32], [])
    module = b.build(
        b.tuple(
            [
                padded,
                chosen,
                b.copy(p),
                b.add(p, one),
                b.max(p, one),
                b.negate(p),
                b.abs(p),
                b.convert(p, dtypes.F32),
                b.convert(p, dtypes.F16),
                b.convert(p, dtypes.F8E4M3FN),
                b.bitcast_convert(chosen, dtypes.U8),
                b.constant(x),
            ]
        )
    )
    pick = np.random.default_rng(2).integers(0, 2, 32).astype(bool)
    got, want = run_on_cpu(module, x, pick)
    for g, w in zip(got, want, strict=True):
        assert_bits_equal(g, w, [x])
    assert set(as_bits(got[0]).reshape(-1).tolist()) >= {0x7D, 0x7F, 0xFD, 0xFF}
    assert set(as_bits(got[3]).tolist()) & {0x7D, 0x7F, 0xFD, 0xFF} == set()


def test_e5m2_payload_nans_in_scatter_gather_and_window_kernels():
    """An overwriting scatter and a gather move payload NaNs bit for bit; a scatter maximum
    and a reduce-window maximum make them canonical, as the maximum op does (where NaNs of both
    signs meet, the sign is the hardware's choice: there only NaN-ness is compared)."""
    from hlort.ir import attributes as attr

    e5m2 = dtypes.F8E5M2
    x = np.resize(np.concatenate([E5M2_PAYLOAD_NANS, [0x3C, 0x40, 0x7E, 0x00]]), 64)
    x = x.astype(np.uint8).reshape(16, 4).view(e5m2.numpy)
    rows = np.array([[1], [3], [1], [15], [0]], np.int32)
    scatter_rows = attr.ScatterDimensionNumbers((1,), (0,), (0,), 1)
    gather_rows = attr.GatherDimensionNumbers((1,), (0,), (0,), 1)
    b = Builder("move")
    p, idx = b.parameter(shape.array(e5m2, [16, 4])), b.parameter(shape.array(dtypes.S32, [5, 1]))
    up = b.parameter(shape.array(e5m2, [5, 4]))
    sub = b.sub("set")
    sub.parameter(shape.scalar(e5m2))
    overwrite = b._comp(sub.finish(sub.parameter(shape.scalar(e5m2))))
    module = b.build(
        b.tuple(
            [
                b.scatter([p], idx, [up], overwrite, scatter_rows),
                b.gather(p, idx, gather_rows, [1, 4]),
            ]
        )
    )
    for g, w in zip(*run_on_cpu(module, x, rows, x[4:9]), strict=True):
        assert_bits_equal(g, w)
    b = Builder("maximum")
    p, idx = b.parameter(shape.array(e5m2, [16, 4])), b.parameter(shape.array(dtypes.S32, [5, 1]))
    up = b.parameter(shape.array(e5m2, [5, 4]))
    maximum = b.scalar_computation("maximum", e5m2)
    window = attr.window_from_sizes([2, 1], [1, 1])
    module = b.build(
        b.tuple(
            [
                b.scatter([p], idx, [up], maximum, scatter_rows),
                b.reduce_window(p, b.constant(np.array(0, e5m2.numpy)), maximum, window),
            ]
        )
    )
    got, want = run_on_cpu(module, x, rows, x[4:9])
    for g, w in zip(got, want, strict=True):
        assert_bits_equal(g, w, nan_operands=[np.asarray(w)])
    combined = [as_bits(got[0])[rows.reshape(-1)], as_bits(got[1])]  # updated rows, every window
    assert not any(np.isin(c, E5M2_PAYLOAD_NANS).any() for c in combined)


EXACT_UNARY = [
    Opcode.ABS,
    Opcode.NEGATE,
    Opcode.SIGN,
    Opcode.FLOOR,
    Opcode.CEIL,
    Opcode.ROUND_NEAREST_AFZ,
    Opcode.ROUND_NEAREST_EVEN,
    Opcode.IS_FINITE,
    Opcode.COPY,
]


@pytest.mark.parametrize("op", EXACT_UNARY, ids=lambda o: o.value)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_exact_unary_ops_on_every_pattern(f8, op):
    x = float8_patterns(f8)
    got, want = run_on_cpu(unary_module(op, f8, 256), x)
    assert_bits_equal(got, want, [x])


@pytest.mark.parametrize("bits", [(2, 1), (3, 2), (4, 3), (5, 2), (8, 7), (4, 0)])
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_reduce_precision_on_every_pattern(f8, bits):
    x = ALL_PATTERNS.view(f8.numpy)
    module = unary_module(
        Opcode.REDUCE_PRECISION, f8, 256, exponent_bits=bits[0], mantissa_bits=bits[1]
    )
    got, want = run_on_cpu(module, x)
    assert_bits_equal(got, want, [x])


def _order_key(a: np.ndarray) -> np.ndarray:
    bits = as_bits(a).astype(np.int32)
    return np.where(bits & 0x80, -(bits & 0x7F), bits)


def _assert_within_one_ulp(got, want, inputs, max_differing: int) -> None:
    """Same NaN-ness; otherwise adjacent float8 values at most (-0 and +0 are adjacent), and
    differing in at most ``max_differing`` elements."""
    g, w = np.asarray(got), np.asarray(want)
    gnan, wnan = np.isnan(g.astype(np.float32)), np.isnan(w.astype(np.float32))
    np.testing.assert_array_equal(gnan, wnan)
    distance = np.abs(_order_key(g) - _order_key(w))
    distance = np.where(gnan, 0, distance)
    bad = np.nonzero(distance > 1)[0]
    assert bad.size == 0, (
        bad[:5],
        [as_bits(x)[bad[:5]] for x in inputs],
        as_bits(g)[bad[:5]],
        as_bits(w)[bad[:5]],
    )
    assert int(np.count_nonzero(distance)) <= max_differing


TRANSCENDENTAL = [
    Opcode.EXP,
    Opcode.EXPM1,
    Opcode.LOG,
    Opcode.LOG1P,
    Opcode.LOGISTIC,
    Opcode.SQRT,
    Opcode.RSQRT,
    Opcode.CBRT,
    Opcode.TANH,
    Opcode.SINE,
    Opcode.COSINE,
    Opcode.TAN,
    Opcode.ERF,
]


@pytest.mark.parametrize("op", TRANSCENDENTAL, ids=lambda o: o.value)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_transcendentals_on_every_pattern(f8, op):
    """Tolerance: one float8 ulp, in at most 2 of the 256 inputs (measured: 0)."""
    x = ALL_PATTERNS.view(f8.numpy)
    got, want = run_on_cpu(unary_module(op, f8, 256), x)
    _assert_within_one_ulp(got, want, [x], max_differing=2)


@pytest.mark.parametrize("op", [Opcode.POWER, Opcode.ATAN2], ids=lambda o: o.value)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_power_and_atan2_on_every_pair(f8, op):
    """Tolerance: one float8 ulp, in at most 16 of the 65536 pairs (measured: 0)."""
    x, y = _all_pairs(f8)
    got, want = run_on_cpu(_binary(op, f8, x.size), x, y)
    _assert_within_one_ulp(got, want, [x, y], max_differing=16)


# -- fusions, data movement, reductions, shapes -------------------------------------------------
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_fused_chain_rounds_after_every_op(f8):
    """f32 in -> float8 -> (x * y + c) max x, select on a compare, constants -> f32 out: one loop,
    rounding to float8 after every op like the interpreter."""
    rng = np.random.default_rng(11)
    n = 4096
    x = rng.standard_normal(n).astype(np.float32) * 40
    y = ALL_PATTERNS[rng.integers(0, 256, n)].view(f8.numpy)
    x[:8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-6, 500, -70000]
    table = rng.standard_normal(n).astype(f8.numpy)
    b = Builder("chain")
    p = b.parameter(shape.array(dtypes.F32, [n]))
    q = b.parameter(shape.array(f8, [n]))
    xf8 = b.convert(p, f8)
    fma = b.add(b.mul(xf8, q), b.constant(table))
    big = b.max(fma, xf8)
    half = b.broadcast(b.constant(np.array(0.5, f8.numpy)), [n], [])
    chosen = b.select(b.compare(big, half, "GT"), b.subtract(big, half), b.negate(q))
    module = b.build(b.tuple([b.convert(chosen, dtypes.F32), b.convert(b.exp(chosen), dtypes.F64)]))
    got, want = run_on_cpu(module, x, y)
    assert_bits_equal(got[0], want[0], [x, y], nan_operands=[x, y])
    as_f8 = [np.asarray(r[1]).astype(f8.numpy) for r in (got, want)]
    _assert_within_one_ulp(*as_f8, [x, y], max_differing=4)


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_data_movement_in_a_fused_loop(f8):
    """slice, reverse, concatenate, pad, broadcast, transpose and dynamic-slice of 1-byte elements
    in one loop fusion, plus an add so it is not a plain copy: bit for bit, payload NaNs too."""
    x = float8_patterns(f8).reshape(16, 16)
    b = Builder("move")
    p = b.parameter(shape.array(f8, [16, 16]))
    i = b.parameter(shape.scalar(dtypes.S32))
    left = b.reverse(b.slice(p, [0, 0], [16, 8]), [0])
    right = b.transpose(b.slice(p, [8, 0], [16, 16]), [1, 0])  # (16, 8)
    moved = b.concatenate([left, right], 1)
    padded = b.pad(moved, b.constant(np.array(-1.5, f8.numpy)), [(1, 2, 0), (0, 1, 1)])
    window = b.dynamic_slice(padded, [i, b.constant(np.int32(3))], [8, 8])
    row = b.broadcast(b.reshape(b.slice(p, [5, 0], [6, 8]), [8]), [8, 8], [1])
    module = b.build(b.tuple([padded, b.add(window, row)]))
    got, want = run_on_cpu(module, x, np.int32(4))
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[1], want[1])


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_transpose_and_sort_move_raw_bytes(f8):
    rng = np.random.default_rng(5)
    x = rng.permutation(np.tile(ALL_PATTERNS, 4)).reshape(4, 256).view(f8.numpy)
    b = Builder("t")
    module = b.build(b.transpose(b.parameter(shape.array(f8, [4, 256])), [1, 0]))
    got, want = run_on_cpu(module, x)
    assert_bits_equal(got, want)  # every pattern, e5m2 payload NaNs too
    for comparison in (None, "TOTALORDER"):
        b = Builder("s")
        p = b.parameter(shape.array(f8, [4, 256]))
        module = b.build(b.sort([p], b.comparator([f8], "LT", comparison), dimension=1))
        got, want = run_on_cpu(module, x)
        assert_bits_equal(got, want)


def _finite_patterns(f8: dtypes.DType, low: float, high: float) -> np.ndarray:
    v = ALL_PATTERNS.view(f8.numpy)
    a = np.abs(v.astype(np.float32))
    return ALL_PATTERNS[(a >= low) & (a <= high)]


@pytest.mark.parametrize("op", ["add", "maximum", "minimum", "multiply"])
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_row_reductions_accumulate_in_f32(f8, op):
    """Row reduces compile (f32 accumulator, one rounding at the end, as the interpreter sums).
    Values whose f32 sums and products are exact make the result independent of the order, so
    it must match bit for bit; a row with NaNs of both signs may give either sign (as f32)."""
    rng = np.random.default_rng(13)
    low, high = (0.125, 8.0) if op != "multiply" else (0.5, 2.0)
    pool = _finite_patterns(f8, low, high)
    cols = 256 if op != "multiply" else 8
    x = pool[rng.integers(0, pool.size, (6, cols))].view(f8.numpy)
    x[0, 3] = np.nan
    x[1, 5] = -np.float32("nan")
    x[1, 7] = np.nan
    x[2, 0] = np.float32(-0.0)
    b = Builder("r")
    p = b.parameter(shape.array(f8, [6, cols]))
    init = b.constant(np.array(1 if op == "multiply" else 0, f8.numpy))
    module = b.build(b.reduce([p], [init], b.scalar_computation(op, f8), [1]))
    got, want = run_on_cpu(module, x)
    np.testing.assert_array_equal(is_nan(got), is_nan(want))
    assert_bits_equal(np.asarray(got)[2:], np.asarray(want)[2:])


@pytest.mark.parametrize("op", ["add", "maximum", "minimum", "multiply"])
@pytest.mark.parametrize("f8", [*F8, dtypes.F16, dtypes.BF16], ids=lambda d: d.name)
def test_column_reductions_accumulate_in_f32(f8, op):
    """Column reduces (a kept last dimension) compile like row reduces: f32 accumulators (in
    scratch), one rounding at the end. Exact values, payload NaNs (which become canonical, as
    the interpreter's f32 sum makes them), -0.0, a tuple of two reduces and an empty one."""
    rng = np.random.default_rng(17)
    low, high = (0.125, 8.0) if op != "multiply" else (0.5, 2.0)
    if f8 in F8:
        pool = _finite_patterns(f8, low, high).view(f8.numpy)
    else:
        pool = np.array(
            [0.125, 0.25, 0.5, 1, 2, 4, 8] if op != "multiply" else [0.5, 1, 2], f8.numpy
        )
    rows = 256 if op != "multiply" else 8
    x = pool[rng.integers(0, pool.size, (rows, 3, 5))]
    x[3, 0, 1] = np.nan
    x[4, 1, 2] = -np.float32("nan")
    x[5, 1, 2] = np.nan
    x[:, 2, 4] = np.float32(-0.0)
    if f8 is dtypes.F8E5M2:
        x.view(np.uint8)[7, 0, 3] = 0x7D
    b = Builder("c")
    p = b.parameter(shape.array(f8, [rows, 3, 5]))
    e = b.parameter(shape.array(f8, [0, 4]))
    init = b.constant(np.array(1 if op == "multiply" else 0, f8.numpy))
    comp = b.scalar_computation(op, f8)
    module = b.build(
        b.tuple(
            [
                b.reduce([p], [init], comp, [0]),
                b.reduce([e], [init], comp, [0]),
                b.reduce([p], [init], comp, [0, 1]),
            ]
        )
    )
    got, want = run_on_cpu(module, x, np.zeros((0, 4), f8.numpy))
    for g, w in zip(got, want, strict=True):  # NaNs of both signs in a column: either sign
        assert_bits_equal(g, w, nan_operands=[np.asarray(w)])
        assert not np.isin(as_bits(g), E5M2_PAYLOAD_NANS).any() or f8 is not dtypes.F8E5M2


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_scalar_and_empty_shapes(f8):
    b = Builder("scalar")
    p = b.parameter(shape.scalar(f8))
    q = b.parameter(shape.scalar(dtypes.F32))
    module = b.build(b.tuple([b.mul(p, b.convert(q, f8)), b.convert(p, dtypes.S32)]))
    for v, w in [(3.5, 7.25), (-0.0, 1.0), (np.nan, 2.0), (240.0, 3.0)]:
        got, want = run_on_cpu(module, np.array(v, f8.numpy), np.float32(w))
        assert_bits_equal(got[0], want[0])
        assert_bits_equal(got[1], want[1])
    b = Builder("empty")
    p = b.parameter(shape.array(f8, [0, 3]))
    module = b.build(b.convert(b.add(p, p), dtypes.F32))
    got, want = run_on_cpu(module, np.zeros((0, 3), f8.numpy))
    assert np.asarray(got).shape == (0, 3) and np.asarray(got).dtype == np.float32


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_window_scatter_gather_iota_constant_kernels(f8):
    """The other kernels take float8 through the same load/store: bit for bit, no FALLBACK."""
    from hlort.ir import attributes as attr

    x = float8_patterns(f8, canonical_nans=True).reshape(16, 16)
    rows = np.array([[1], [3], [1], [15], [0]], np.int32)
    for op in ("add", "maximum"):
        b = Builder("rw")
        p = b.parameter(shape.array(f8, [16, 16]))
        module = b.build(
            b.reduce_window(
                p,
                b.constant(np.array(0, f8.numpy)),
                b.scalar_computation(op, f8),
                attr.window_from_sizes([2, 3], [1, 2]),
            )
        )
        assert_bits_equal(*run_on_cpu(module, x))
    b = Builder("scatter")
    p = b.parameter(shape.array(f8, [16, 16]))
    idx = b.parameter(shape.array(dtypes.S32, [5, 1]))
    up = b.parameter(shape.array(f8, [5, 16]))
    dnums = attr.ScatterDimensionNumbers((1,), (0,), (0,), 1)
    module = b.build(b.scatter([p], idx, [up], b.scalar_computation("add", f8), dnums))
    assert_bits_equal(*run_on_cpu(module, x, rows, x[:5]))
    b = Builder("gather")
    p = b.parameter(shape.array(f8, [16, 16]))
    idx = b.parameter(shape.array(dtypes.S32, [5, 1]))
    dnums = attr.GatherDimensionNumbers((1,), (0,), (0,), 1)
    assert_bits_equal(*run_on_cpu(b.build(b.gather(p, idx, dnums, [1, 16])), x, rows))
    b = Builder("iota")
    half = b.broadcast(b.constant(np.array(0.5, f8.numpy)), [600], [])
    nans = b.constant(np.resize(np.array([np.nan, -np.nan, 1, -0.0], f8.numpy), 600))
    module = b.build(b.tuple([b.add(b.iota(shape.array(f8, [600]), 0), half), b.add(nans, half)]))
    got, want = run_on_cpu(module)
    assert_bits_equal(got[0], want[0])
    assert_bits_equal(got[1], want[1])
    big = np.random.default_rng(4).standard_normal((1024, 300)).astype(f8.numpy)
    b = Builder("big")  # an output large enough for the cpu plugin's pooled allocator
    p = b.parameter(shape.array(f8, [1024, 300]))
    got, want = run_on_cpu(b.build(b.multiply(p, p)), big)
    assert np.asarray(got).dtype == f8.numpy
    assert_bits_equal(got, want)
