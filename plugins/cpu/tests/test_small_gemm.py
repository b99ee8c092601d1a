"""The small-matmul emitter (codegen/small_gemm.py) called directly, against NumPy in float64.

Every register blocking the emitter may pick (and the host's own choice) and every k unroll,
over shapes that exercise full and tail row blocks, full, masked and single-vector column
blocks, k of 1 (no loop), odd k (a remainder after the unrolled loop), batches with batch
strides, a transposed (column-strided) lhs and a row stride wider than n for the rhs.
Inputs hold NaN, +-inf and -0.0. Tolerance, stated: each output is the fma chain in order of
k, so per element within the dot bound ``2 (K + 2) eps sum |a b|`` of the exact sum, NaN where
the float64 product has NaN, the same infinities (contraction_tolerance.assert_within).
Unroll and blocking only regroup the same chain: their results are bit for bit equal.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import llvmlite.ir as ir  # noqa: E402
from contraction_tolerance import assert_within  # noqa: E402

from hlort_cpu.codegen import small_gemm  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402

RNG = np.random.default_rng(41)
_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
_COUNT = [0]


def _compile(g: small_gemm.SmallGemm, block_shape, unroll: int, vector_bits: int):
    engine = jit_engine()
    _COUNT[0] += 1
    name = f"test_small_gemm_{_COUNT[0]}"
    module = ir.Module(name=name)
    small_gemm.emit_small_gemm(module, name, g, vector_bits, block_shape, unroll)
    obj = engine.compile_ir(str(module))
    return _FN(engine.load_object(obj, [name])[name])


def _operands(dtype, batch, m, n, k, lhs_transposed, rhs_pad, special):
    a = RNG.standard_normal((batch, k, m) if lhs_transposed else (batch, m, k)).astype(dtype)
    if lhs_transposed:
        a = np.ascontiguousarray(a)
    b_full = RNG.standard_normal((batch, k, n + rhs_pad)).astype(dtype)
    if special and a.size >= 4:
        flat = a.reshape(-1)
        flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    return a, b_full


def _run(
    dtype, batch, m, n, k, lhs_transposed, rhs_pad, block_shape, unroll, special=True, bits=None
):
    double = dtype == np.float64
    a, b_full = _operands(dtype, batch, m, n, k, lhs_transposed, rhs_pad, special)
    a_rs, a_cs = (1, m) if lhs_transposed else (k, 1)
    g = small_gemm.SmallGemm(
        double, batch, m, n, k, a_rs, a_cs, m * k if batch > 1 else 0, n + rhs_pad, b_full[0].size
    )
    vector_bits = bits or jit_engine().target.vector_bits
    fn = _compile(g, block_shape, unroll, vector_bits)
    c = np.full((batch, m, n), np.nan, dtype)
    fn(a.ctypes.data, b_full.ctypes.data, c.ctypes.data)
    lhs = np.swapaxes(a, 1, 2) if lhs_transposed else a
    return c, lhs, b_full[:, :, :n]


def _check(c, lhs, rhs, k):
    with np.errstate(invalid="ignore", over="ignore"):
        ref = np.matmul(lhs.astype(np.float64), rhs.astype(np.float64))
        magnitude = np.matmul(np.abs(lhs.astype(np.float64)), np.abs(rhs.astype(np.float64)))
    magnitude[~np.isfinite(magnitude)] = 0
    eps = float(np.finfo(c.dtype).eps)
    tiny = float(np.finfo(c.dtype).smallest_subnormal)
    assert_within(c, ref, 2 * (k + 2) * eps * magnitude + tiny)


SHAPES = [  # batch, m, n, k, lhs transposed, rhs row padding
    (1, 16, 512, 32, False, 0),  # the LSTM cell's input dot
    (1, 16, 512, 128, False, 0),  # and its recurrent dot
    (1, 13, 37, 9, False, 0),  # row and masked column tails, odd k
    (1, 7, 10, 1, False, 0),  # k = 1: no loop, only the remainder step
    (1, 1, 1, 3, False, 0),
    (1, 5, 8, 2, False, 3),  # one exact vector of columns; rhs rows padded
    (2, 6, 25, 5, True, 0),  # batch, column-strided lhs, one column past a vector
    (3, 9, 48, 4, False, 1),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_small_gemm_within_the_dot_bound(dtype, shape):
    batch, m, n, k, lhs_t, pad = shape
    c, lhs, rhs = _run(dtype, batch, m, n, k, lhs_t, pad, None, small_gemm.K_UNROLL)
    _check(c, lhs, rhs, k)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("block_shape", [(4, 2), (4, 3), (6, 2), (8, 2), (8, 3), (1, 1)], ids=str)
@pytest.mark.parametrize("unroll", [1, 2, 3])
def test_blockings_and_unrolls_agree_bit_for_bit(dtype, block_shape, unroll):
    """The same chains of fma whatever the block and unroll: equal bits (NaN included), and
    within the dot bound of float64."""
    shapes = [(1, 13, 37, 9, False, 0), (2, 6, 25, 5, True, 0), (1, 3, 5, 1, False, 2)]
    for batch, m, n, k, lhs_t, pad in shapes:
        state = RNG.bit_generator.state
        c, lhs, rhs = _run(dtype, batch, m, n, k, lhs_t, pad, block_shape, unroll)
        _check(c, lhs, rhs, k)
        RNG.bit_generator.state = state  # the same operands for the reference blocking
        base, _, _ = _run(dtype, batch, m, n, k, lhs_t, pad, (4, 2), 1)
        np.testing.assert_array_equal(c.view(np.uint8), base.view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bits", [256, 512])
def test_avx2_and_avx512_widths_agree_bit_for_bit(dtype, bits):
    """The AVX2 path (256-bit vectors, its blocking) and the AVX-512 one (512 bits, 8 x 3) give
    the same bits as the reference blocking at the host's width, within the dot bound (LLVM
    legalizes the wider vectors on a host without them)."""
    for batch, m, n, k, lhs_t, pad in SHAPES:
        state = RNG.bit_generator.state
        c, lhs, rhs = _run(dtype, batch, m, n, k, lhs_t, pad, None, small_gemm.K_UNROLL, bits=bits)
        _check(c, lhs, rhs, k)
        RNG.bit_generator.state = state
        base, _, _ = _run(dtype, batch, m, n, k, lhs_t, pad, (4, 2), 1)
        np.testing.assert_array_equal(c.view(np.uint8), base.view(np.uint8))


@pytest.mark.parametrize("vector_bits", [128, 256, 512])
@pytest.mark.parametrize("n", [1, 5, 16, 17, 100])
def test_blocking_fits_the_register_file(vector_bits, n):
    """Accumulators, rhs vectors and the broadcast fit 16 registers (32 with AVX-512)."""
    for double in (False, True):
        rows, vectors = small_gemm.blocking(vector_bits, double, n)
        registers = 32 if vector_bits >= 512 else 16
        assert rows >= 1 and vectors >= 1
        assert rows * vectors + vectors + 1 <= registers


_RANGED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 512, 128), (13, 37, 9), (5, 8, 3), (4, 100, 1)], ids=str)
def test_ranged_kernel_splits_columns_bit_for_bit(dtype, shape):
    """The pool's form (native loops split a big small-matmul in two): every split point of
    the column blocks gives the whole kernel's bits (the same fma chains)."""
    m, n, k = shape
    double = dtype == np.float64
    a = RNG.standard_normal((m, k)).astype(dtype)
    b = RNG.standard_normal((k, n)).astype(dtype)
    g = small_gemm.SmallGemm(double, 1, m, n, k, k, 1, 0, n, 0)
    bits = jit_engine().target.vector_bits
    whole = np.full((m, n), np.nan, dtype)
    _compile(g, None, small_gemm.K_UNROLL, bits)(a.ctypes.data, b.ctypes.data, whole.ctypes.data)
    engine = jit_engine()
    _COUNT[0] += 1
    name = f"test_small_gemm_ranged_{_COUNT[0]}"
    module = ir.Module(name=name)
    small_gemm.emit_small_gemm(module, name, g, bits, ranged=True)
    fn = _RANGED(engine.load_object(engine.compile_ir(str(module)), [name])[name])
    total = small_gemm.column_blocks(g, bits)
    for cut in range(total + 1):
        c = np.full((m, n), np.nan, dtype)
        table = (ctypes.c_void_p * 3)(a.ctypes.data, b.ctypes.data, c.ctypes.data)
        fn(ctypes.addressof(table), 0, cut)
        fn(ctypes.addressof(table), cut, total)
        np.testing.assert_array_equal(c.view(np.uint8), whole.view(np.uint8))
