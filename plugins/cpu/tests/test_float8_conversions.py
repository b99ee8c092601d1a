"""float8 (f8E4M3FN, f8E5M2) conversions on the cpu backend vs the reference interpreter, bit for
bit: every pattern to and from every type, f32/f64 rounding like ml_dtypes (once), 64-bit integers
rounding once, bitcast round trips. (Elementwise ops, fusions and movement: test_float8.py.)"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

pytest.importorskip("llvmlite")

from float8_helpers import (  # noqa: E402
    ALL_PATTERNS,
    F8,
    F8_IDS,
    REAL,
    assert_bits_equal,
    run_on_cpu,
    unary_module,
)

from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.ir.opcodes import Opcode  # noqa: E402


# -- conversions ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dst", REAL, ids=[d.name for d in REAL])
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_every_float8_pattern_converts_to_every_type(f8, dst):
    x = ALL_PATTERNS.view(f8.numpy)
    got, want = run_on_cpu(unary_module(Opcode.CONVERT, f8, 256, out=dst), x)
    assert_bits_equal(got, want, [x])


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
    got, want = run_on_cpu(unary_module(Opcode.CONVERT, dtypes.F32, x.size, out=f8), x)
    assert_bits_equal(got, want, [x])
    with np.errstate(all="ignore"):
        assert_bits_equal(got, x.astype(f8.numpy))  # and the interpreter is ml_dtypes here


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_f64_to_float8_rounds_once(f8):
    """Values a hair off each midpoint would round twice through f32 round-to-nearest."""
    mids = _f32_edge_values(f8).astype(np.float64)
    tiny = np.abs(mids) * 2.0**-40
    x = np.concatenate([mids, mids + tiny, mids - tiny, [1e300, -1e300, 5e-324, np.nan]])
    rng = np.random.default_rng(8)
    x = np.concatenate([x, rng.integers(0, 1 << 63, 20_000, dtype=np.int64).view(np.float64)])
    got, want = run_on_cpu(unary_module(Opcode.CONVERT, dtypes.F64, x.size, out=f8), x)
    assert_bits_equal(got, want, [x])


@pytest.mark.parametrize(
    "src",
    [dtypes.F16, dtypes.BF16, dtypes.S8, dtypes.U8, dtypes.S16, dtypes.U16],
    ids=lambda d: d.name,
)
@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_every_narrow_pattern_converts_to_float8(f8, src):
    x = np.arange(1 << src.bits, dtype=np.uint64).astype(f"u{src.itemsize}").view(src.numpy)
    got, want = run_on_cpu(unary_module(Opcode.CONVERT, src, x.size, out=f8), x)
    assert_bits_equal(got, want, [x])


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
    got, want = run_on_cpu(unary_module(Opcode.CONVERT, src, x.size, out=f8), x)
    assert_bits_equal(got, want, [x])


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
    got, want = run_on_cpu(unary_module(Opcode.CONVERT, src, x.size, out=dst), x)
    assert_bits_equal(got, want, [x])


@pytest.mark.parametrize("f8", F8, ids=F8_IDS)
def test_bitcast_convert_round_trips_every_pattern(f8):
    """Every pattern both ways, f8E5M2's payload NaNs included (registers keep them)."""
    for other in (dtypes.S8, dtypes.U8):
        b = Builder("bitcast")
        p = b.parameter(shape.array(other, [256]))
        as_f8 = b.bitcast_convert(p, f8)
        module = b.build(b.tuple([as_f8, b.bitcast_convert(as_f8, other)]))
        got, want = run_on_cpu(module, ALL_PATTERNS.view(other.numpy))
        assert_bits_equal(got[0], want[0])
        assert_bits_equal(got[1], want[1])
