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

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402

F8 = (dtypes.F8E4M3FN, dtypes.F8E5M2)
F8_IDS = [d.name for d in F8]
REAL = [d for d in dtypes.ALL_DTYPES if not d.is_complex]
ALL_PATTERNS = np.arange(256, dtype=np.uint8)
E5M2_PAYLOAD_NANS = np.array([0x7D, 0x7F, 0xFD, 0xFF], dtype=np.uint8)


def _bits(a) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(a))
    return a.view(np.uint8) if a.dtype == np.bool_ else a.view(f"u{a.dtype.itemsize}")


def _run(module, *args, fallback: int = 0):
    """(cpu result, interpreter result), asserting the number of FALLBACK thunks."""
    exe = hlort.compile(module, "cpu")
    got = exe(*args)
    stats = exe.raw.stats()
    assert stats["fallback_count"] == fallback, stats
    return got, hlort.evaluate(module, list(args))


def _is_nan(a) -> np.ndarray:
    return np.isnan(np.asarray(a).astype(np.float32)).reshape(-1)


def _assert_bits_equal(got, want, inputs=None, nan_operands: list | None = None) -> None:
    """Bit for bit; where every one of ``nan_operands`` is NaN, any NaN (the sign of NaN op NaN
    is the hardware's choice, as for f32: LLVM may commute the operands)."""
    g, w = _bits(got), _bits(want)
    assert g.shape == w.shape and g.dtype == w.dtype
    differ = g.reshape(-1) != w.reshape(-1)
    if nan_operands:
        all_nan = np.logical_and.reduce([_is_nan(x) for x in nan_operands])
        differ &= ~(all_nan & _is_nan(got) & _is_nan(want))
    bad = np.nonzero(differ)[0]
    detail = ""
    if bad.size and inputs is not None:
        detail = f" inputs {[_bits(x).reshape(-1)[bad[:5]] for x in inputs]}"
    assert bad.size == 0, (
        f"{bad.size} mismatches, first at {bad[:5]}: "
        f"got {g.reshape(-1)[bad[:5]]} want {w.reshape(-1)[bad[:5]]}{detail}"
    )


def _patterns(f8: dtypes.DType, canonical_nans: bool = False) -> np.ndarray:
    """All 256 bit patterns; e5m2's payload NaNs replaced by canonical ones when asked."""
    raw = ALL_PATTERNS.copy()
    if canonical_nans and f8 is dtypes.F8E5M2:
        raw = np.where(np.isin(raw, E5M2_PAYLOAD_NANS), raw & 0x80 | 0x7E, raw).astype(np.uint8)
    return raw.view(f8.numpy)


def _unary(op: Opcode, dt: dtypes.DType, n: int, out: dtypes.DType | None = None, **attrs):
    b = Builder(op.value.replace("-", "_"))
    p = b.parameter(shape.array(dt, [n]))
    if out is not None:
        return b.build(b.convert(p, out))
    return b.build(b.op(op, (p,), **attrs))


# -- conversions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dst", REAL, ids=[d.name for d in REAL])
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_every_float8_pattern_converts_to_every_type(f8, dst):
    x = ALL_PATTERNS.view(f8.numpy)
    got, want = _run(_unary(Opcode.CONVERT, f8, 256, out=dst), x)
    _assert_bits_equal(got, want, [x])


def _f32_edge_values(f8: dtypes.DType) -> np.ndarray:
    """Every float8 value, every midpoint between neighbours and the f32 values one ulp either
    side of it, values around the overflow threshold, huge values, f32 subnormals, inf, NaNs."""
    finite = np.sort(np.unique(ALL_PATTERNS.view(f8.numpy).astype(np.float64)))
    finite = finite[np.isfinite(finite)]
    info = ml_dtypes.finfo(f8.numpy)
    top = float(info.max)
    step = top - float(np.nextafter(np.array(top, f8.numpy), np.array(0, f8.numpy)))
    extended = np.concatenate([finite, [top + step, -top - step]])
    extended = np.sort(extended)
    mids = ((extended[1:] + extended[:-1]) / 2).astype(np.float32)  # exact in f32
    around = np.concatenate(
        [mids, np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))]
    )
    special = np.array(
        [
            0.0,
            -0.0,
            np.inf,
            -np.inf,
            1e30,
            -1e30,
            3.4028235e38,
            -3.4028235e38,
            1e-45,
            -1e-45,
            1e-40,
            1.1754942e-38,
            1e-10,
            -1e-10,
        ],
        np.float32,
    )
    nans = np.array(
        [
            0x7FC00000,
            0xFFC00000,
            0x7F800001,
            0xFF800001,
            0x7FFFFFFF,
            0x7FA00000,
            0x7FE00000,
            0xFFE00001,
        ],
        np.uint32,
    ).view(np.float32)
    rng = np.random.default_rng(7)
    random = rng.integers(0, 1 << 32, 50_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([finite.astype(np.float32), around, special, nans, random])


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_f32_to_float8_rounds_like_ml_dtypes(f8):
    x = _f32_edge_values(f8)
    got, want = _run(_unary(Opcode.CONVERT, dtypes.F32, x.size, out=f8), x)
    _assert_bits_equal(got, want, [x])
    with np.errstate(all="ignore"):
        _assert_bits_equal(got, x.astype(f8.numpy))  # and the interpreter is ml_dtypes here


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_f64_to_float8_rounds_once(f8):
    """Values a hair off each midpoint would round twice through f32 round-to-nearest."""
    mids = _f32_edge_values(f8).astype(np.float64)
    tiny = np.abs(mids) * 2.0**-40
    x = np.concatenate([mids, mids + tiny, mids - tiny, [1e300, -1e300, 5e-324, np.nan]])
    rng = np.random.default_rng(8)
    x = np.concatenate([x, rng.integers(0, 1 << 63, 20_000, dtype=np.int64).view(np.float64)])
    got, want = _run(_unary(Opcode.CONVERT, dtypes.F64, x.size, out=f8), x)
    _assert_bits_equal(got, want, [x])


@pytest.mark.parametrize(
    "src",
    [dtypes.F16, dtypes.BF16, dtypes.S8, dtypes.U8, dtypes.S16, dtypes.U16],
    ids=lambda d: d.name,
)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_every_narrow_pattern_converts_to_float8(f8, src):
    x = np.arange(1 << src.bits, dtype=np.uint64).astype(f"u{src.itemsize}").view(src.numpy)
    got, want = _run(_unary(Opcode.CONVERT, src, x.size, out=f8), x)
    _assert_bits_equal(got, want, [x])


@pytest.mark.parametrize("src", [dtypes.S32, dtypes.U32, dtypes.PRED], ids=lambda d: d.name)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_wide_integers_convert_to_float8(f8, src):
    if src.is_pred:
        x = np.array([False, True])
    else:
        info = np.iinfo(src.numpy)
        rng = np.random.default_rng(9)
        edges = [
            info.min,
            info.max,
            0,
            1,
            -1 if src.is_signed_integer else 2,
            464,
            465,
            61440,
            61439,
            57344,
            480,
            448,
        ]
        x = np.concatenate(
            [
                np.array(edges).astype(src.numpy),
                rng.integers(info.min, info.max, 20_000, dtype=src.numpy),
            ]
        )
    got, want = _run(_unary(Opcode.CONVERT, src, x.size, out=f8), x)
    _assert_bits_equal(got, want, [x])


def _wide_integers(src: dtypes.DType, dst: dtypes.DType) -> np.ndarray:
    """Every bit length, the type's extremes, and integers a hair off each rounding midpoint
    of ``dst`` above 2**53 (where a rounded f64 would land on the midpoint: rounding twice)."""
    info = np.iinfo(src.numpy)
    rng = np.random.default_rng(12)
    lengths = rng.integers(0, 64 if src.is_signed_integer else 65, 20_000)
    raw = rng.integers(0, 1 << 62, 20_000, dtype=np.int64).astype(np.uint64) << np.uint64(2)
    random = (raw >> (np.uint64(64) - lengths.astype(np.uint64))).astype(np.uint64)
    random[lengths == 0] = 0
    nmant = int(ml_dtypes.finfo(dst.numpy).nmant)
    near = []
    for top in range(54, 64 if src.is_signed_integer else 65):
        half_ulp = 1 << (top - 1 - nmant - 1)
        base = (1 << (top - 1)) + half_ulp  # a midpoint between two dst values
        near += [base - 1, base, base + 1, base + (1 << 10), base - (1 << 11) - 1]
    values = [int(v) for v in random] + near + [0, 1, 465, 61439, 2**53 + 1, info.max, info.min]
    x = np.array([v & ((1 << 64) - 1) for v in values], np.uint64).view(src.numpy)
    if src.is_signed_integer:
        x = np.concatenate([x, -x[x > info.min]])
    return x


@pytest.mark.parametrize("src", [dtypes.S64, dtypes.U64], ids=lambda d: d.name)
@pytest.mark.parametrize("dst", [*F8, dtypes.BF16, dtypes.F16], ids=lambda d: d.name)
def test_64_bit_integers_convert_to_narrow_floats_rounding_once(dst, src):
    x = _wide_integers(src, dst)
    got, want = _run(_unary(Opcode.CONVERT, src, x.size, out=dst), x)
    _assert_bits_equal(got, want, [x])


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_bitcast_convert_round_trips_every_pattern(f8):
    """Every pattern both ways, f8E5M2's payload NaNs included (registers keep them)."""
    for other in (dtypes.S8, dtypes.U8):
        b = Builder("bitcast")
        p = b.parameter(shape.array(other, [256]))
        as_f8 = b.bitcast_convert(p, f8)
        module = b.build(b.tuple([as_f8, b.bitcast_convert(as_f8, other)]))
        got, want = _run(module, ALL_PATTERNS.view(other.numpy))
        _assert_bits_equal(got[0], want[0])
        _assert_bits_equal(got[1], want[1])


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
    got, want = _run(_binary(op, f8, x.size), x, y)
    _assert_bits_equal(got, want, [x, y], nan_operands=[x, y])


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
    got, want = _run(module, x, y)
    _assert_bits_equal(got[0], want[0], [x, y])
    _assert_bits_equal(got[1], want[1], [x, y])


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
    got, want = _run(module, pick, x, y)
    _assert_bits_equal(got[0], want[0], [x, y])
    _assert_bits_equal(got[1], want[1], [x, y], nan_operands=[x, y])


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
    got, want = _run(module, x, pick)
    for g, w in zip(got, want, strict=True):
        _assert_bits_equal(g, w, [x])
    assert set(_bits(got[0]).reshape(-1).tolist()) >= {0x7D, 0x7F, 0xFD, 0xFF}
    assert set(_bits(got[3]).tolist()) & {0x7D, 0x7F, 0xFD, 0xFF} == set()


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
    for g, w in zip(*_run(module, x, rows, x[4:9]), strict=True):
        _assert_bits_equal(g, w)
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
    got, want = _run(module, x, rows, x[4:9])
    for g, w in zip(got, want, strict=True):
        _assert_bits_equal(g, w, nan_operands=[np.asarray(w)])
    combined = [_bits(got[0])[rows.reshape(-1)], _bits(got[1])]  # updated rows, every window
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
    x = _patterns(f8)
    got, want = _run(_unary(op, f8, 256), x)
    _assert_bits_equal(got, want, [x])


@pytest.mark.parametrize("bits", [(2, 1), (3, 2), (4, 3), (5, 2), (8, 7), (4, 0)])
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_reduce_precision_on_every_pattern(f8, bits):
    x = ALL_PATTERNS.view(f8.numpy)
    module = _unary(Opcode.REDUCE_PRECISION, f8, 256, exponent_bits=bits[0], mantissa_bits=bits[1])
    got, want = _run(module, x)
    _assert_bits_equal(got, want, [x])


def _order_key(a: np.ndarray) -> np.ndarray:
    bits = _bits(a).astype(np.int32)
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
        [_bits(x)[bad[:5]] for x in inputs],
        _bits(g)[bad[:5]],
        _bits(w)[bad[:5]],
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
    got, want = _run(_unary(op, f8, 256), x)
    _assert_within_one_ulp(got, want, [x], max_differing=2)


@pytest.mark.parametrize("op", [Opcode.POWER, Opcode.ATAN2], ids=lambda o: o.value)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_power_and_atan2_on_every_pair(f8, op):
    """Tolerance: one float8 ulp, in at most 16 of the 65536 pairs (measured: 0)."""
    x, y = _all_pairs(f8)
    got, want = _run(_binary(op, f8, x.size), x, y)
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
    got, want = _run(module, x, y)
    _assert_bits_equal(got[0], want[0], [x, y], nan_operands=[x, y])
    as_f8 = [np.asarray(r[1]).astype(f8.numpy) for r in (got, want)]
    _assert_within_one_ulp(*as_f8, [x, y], max_differing=4)


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_data_movement_in_a_fused_loop(f8):
    """slice, reverse, concatenate, pad, broadcast, transpose and dynamic-slice of 1-byte elements
    in one loop fusion, plus an add so it is not a plain copy: bit for bit, payload NaNs too."""
    x = _patterns(f8).reshape(16, 16)
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
    got, want = _run(module, x, np.int32(4))
    _assert_bits_equal(got[0], want[0])
    _assert_bits_equal(got[1], want[1])


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_transpose_and_sort_move_raw_bytes(f8):
    rng = np.random.default_rng(5)
    x = rng.permutation(np.tile(ALL_PATTERNS, 4)).reshape(4, 256).view(f8.numpy)
    b = Builder("t")
    module = b.build(b.transpose(b.parameter(shape.array(f8, [4, 256])), [1, 0]))
    got, want = _run(module, x)
    _assert_bits_equal(got, want)  # every pattern, e5m2 payload NaNs too
    for comparison in (None, "TOTALORDER"):
        b = Builder("s")
        p = b.parameter(shape.array(f8, [4, 256]))
        module = b.build(b.sort([p], b.comparator([f8], "LT", comparison), dimension=1))
        got, want = _run(module, x)
        _assert_bits_equal(got, want)


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
    got, want = _run(module, x)
    np.testing.assert_array_equal(_is_nan(got), _is_nan(want))
    _assert_bits_equal(np.asarray(got)[2:], np.asarray(want)[2:])


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
    got, want = _run(module, x, np.zeros((0, 4), f8.numpy))
    for g, w in zip(got, want, strict=True):  # NaNs of both signs in a column: either sign
        _assert_bits_equal(g, w, nan_operands=[np.asarray(w)])
        assert not np.isin(_bits(g), E5M2_PAYLOAD_NANS).any() or f8 is not dtypes.F8E5M2


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_scalar_and_empty_shapes(f8):
    b = Builder("scalar")
    p = b.parameter(shape.scalar(f8))
    q = b.parameter(shape.scalar(dtypes.F32))
    module = b.build(b.tuple([b.mul(p, b.convert(q, f8)), b.convert(p, dtypes.S32)]))
    for v, w in [(3.5, 7.25), (-0.0, 1.0), (np.nan, 2.0), (240.0, 3.0)]:
        got, want = _run(module, np.array(v, f8.numpy), np.float32(w))
        _assert_bits_equal(got[0], want[0])
        _assert_bits_equal(got[1], want[1])
    b = Builder("empty")
    p = b.parameter(shape.array(f8, [0, 3]))
    module = b.build(b.convert(b.add(p, p), dtypes.F32))
    got, want = _run(module, np.zeros((0, 3), f8.numpy))
    assert np.asarray(got).shape == (0, 3) and np.asarray(got).dtype == np.float32


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_window_scatter_gather_iota_constant_kernels(f8):
    """The other kernels take float8 through the same load/store: bit for bit, no FALLBACK."""
    from hlort.ir import attributes as attr

    x = _patterns(f8, canonical_nans=True).reshape(16, 16)
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
        _assert_bits_equal(*_run(module, x))
    b = Builder("scatter")
    p = b.parameter(shape.array(f8, [16, 16]))
    idx = b.parameter(shape.array(dtypes.S32, [5, 1]))
    up = b.parameter(shape.array(f8, [5, 16]))
    dnums = attr.ScatterDimensionNumbers((1,), (0,), (0,), 1)
    module = b.build(b.scatter([p], idx, [up], b.scalar_computation("add", f8), dnums))
    _assert_bits_equal(*_run(module, x, rows, x[:5]))
    b = Builder("gather")
    p = b.parameter(shape.array(f8, [16, 16]))
    idx = b.parameter(shape.array(dtypes.S32, [5, 1]))
    dnums = attr.GatherDimensionNumbers((1,), (0,), (0,), 1)
    _assert_bits_equal(*_run(b.build(b.gather(p, idx, dnums, [1, 16])), x, rows))
    b = Builder("iota")
    half = b.broadcast(b.constant(np.array(0.5, f8.numpy)), [600], [])
    nans = b.constant(np.resize(np.array([np.nan, -np.nan, 1, -0.0], f8.numpy), 600))
    module = b.build(b.tuple([b.add(b.iota(shape.array(f8, [600]), 0), half), b.add(nans, half)]))
    got, want = _run(module)
    _assert_bits_equal(got[0], want[0])
    _assert_bits_equal(got[1], want[1])
    big = np.random.default_rng(4).standard_normal((1024, 300)).astype(f8.numpy)
    b = Builder("big")  # an output large enough for the cpu plugin's pooled allocator
    p = b.parameter(shape.array(f8, [1024, 300]))
    got, want = _run(b.build(b.multiply(p, p)), big)
    assert np.asarray(got).dtype == f8.numpy
    _assert_bits_equal(got, want)
