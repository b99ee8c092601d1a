"""Native while loops whose bodies hold dots (the small-matmul emitter, or BLAS gemm from the
driver) and in-place dynamic-update-slices, against the Python path and the interpreter.

Tolerances, stated:
- BLAS dots, native vs the Python path: bit for bit (same kernels; the same gemm NumPy's matmul
  calls, with the same layout; rows and columns > 1, where NumPy calls gemm, not gemv).
- Small matmuls (summed in order of k, one fma each) and vectors: the dot bound
  ``2 (K + 2) eps sum |a b|`` per trip, plus one rounding of the loop's add per trip
  (``loop_tolerance``); elements the dot does not touch, bit for bit.
- The JAX-lowered LSTM/GRU scans (7 steps, hidden 5, bounded activations), 2e-5 (f32) / 1e-13
  (f64) absolute per element against the Python path and the interpreter: each step's dot
  differs by the dot bound, sigmoid and tanh by a few ulps, and they do not grow a difference.
- In-place dynamic-update-slice and integer dots (the Python path): bit for bit.
Each test also asserts through ``exe.raw.stats()`` which path ran: ``while (native)`` with
``dot (small matmul)`` / ``dot (BLAS)`` / ``dynamic-update-slice (in place)``, else ``while``.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("llvmlite")

from contraction_tolerance import assert_within  # noqa: E402

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402
from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort.runtime.program import parse_program  # noqa: E402
from hlort_cpu import blas_functions, compiler, native_dot  # noqa: E402
from hlort_cpu.codegen.jit import jit_engine  # noqa: E402
from hlort_cpu.native_while import NativeWhileThunk  # noqa: E402

RNG = np.random.default_rng(23)
HERE = os.path.dirname(os.path.abspath(__file__))
needs_blas = pytest.mark.skipif(
    blas_functions.gemm(False) is None, reason="NumPy's BLAS exports no cblas gemm here"
)


def python_path(module, monkeypatch):
    """The module compiled with no native loops (and no cache entry left behind)."""
    with monkeypatch.context() as mp:
        mp.setenv("HLORT_CACHE", "0")
        mp.setattr(compiler, "_plan_whiles", lambda *args: {})
        exe = hlort.compile(module, "cpu")
    assert "while (native)" not in exe.raw.stats()["compiled"]
    return exe


def bits_equal(actual, expected) -> None:
    for a, e in zip(actual, expected, strict=True):
        a, e = np.asarray(a), np.asarray(e)
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), e.reshape(-1).view(np.uint8))


def dot_loop(dtype: str, lhs_dims, rhs_dims, dnums: Dn, name: str = "dot_loop"):
    """``i = 0; while i < n: acc = acc + dot(x, w) * 0.5; x = x * 0.75; i += 1`` -> (i, acc, x);
    ``acc`` has the dot's shape, ``x`` the lhs's, ``w`` is loop-invariant."""
    b = Builder(name)
    x_shape, w_shape = shape.array(dtype, list(lhs_dims)), shape.array(dtype, list(rhs_dims))
    probe = Builder("probe")
    out_shape = probe.dot_general(probe.parameter(x_shape), probe.parameter(w_shape), dnums).shape
    state = shape.tuple_of(shape.scalar("s32"), shape.scalar("s32"), out_shape, x_shape, w_shape)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, acc, x, w = (bb.get_tuple_element(p, k) for k in range(5))
    half = bb.broadcast(bb.constant(0.5, dtype), list(out_shape.dims), [])
    acc = bb.add(acc, bb.multiply(bb.dot_general(x, w, dnums), half))
    x = bb.multiply(x, bb.broadcast(bb.constant(0.75, dtype), list(lhs_dims), []))
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), n, acc, x, w]))
    n0, acc0 = b.parameter(shape.scalar("s32")), b.parameter(out_shape)
    x0, w0 = b.parameter(x_shape), b.parameter(w_shape)
    loop = b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), n0, acc0, x0, w0]))
    module = b.build(b.tuple([b.get_tuple_element(loop, k) for k in (0, 2, 3)]))
    return module, out_shape


def _floats(dtype: str, dims, special: bool = False) -> np.ndarray:
    values = RNG.standard_normal(int(np.prod(dims)))
    if special and values.size >= 3:
        values[:3] = [np.nan, np.inf, -0.0]
    return values.astype(hlort.dtypes.from_hlo_name(dtype).numpy).reshape(dims)


MATMUL = Dn((1,), (0,))
LAYOUTS = {  # name: (lhs dims, rhs dims, dimension numbers, the path the dot takes)
    "row_major": ([6, 9], [9, 7], MATMUL, "small matmul"),
    "tails": ([13, 9], [9, 37], MATMUL, "small matmul"),  # row and masked column tails
    "narrow": ([3, 9], [9, 5], MATMUL, "small matmul"),
    "lhs_transposed": ([9, 6], [9, 7], Dn((0,), (0,)), "small matmul"),
    "batched": ([3, 6, 9], [3, 9, 7], Dn((2,), (1,), (0,), (0,)), "small matmul"),
    "batch_middle_lhs": ([6, 3, 9], [3, 9, 7], Dn((2,), (1,), (1,), (0,)), "small matmul"),
    "rhs_transposed": ([6, 9], [7, 9], Dn((1,), (1,)), "BLAS"),
    "batched_rhs_transposed": ([3, 6, 9], [3, 7, 9], Dn((2,), (2,), (0,), (0,)), "BLAS"),
    "large": ([4, 14000], [14000, 301], MATMUL, "BLAS"),  # over SMALL_GEMM_MAX_PRODUCTS
    # >= native_dot.pool_min_products with several column blocks: two halves on the pool
    "pooled": ([64, 64], [64, 136], MATMUL, "small matmul"),
}


def loop_tolerance(args, trips: int, k: int, eps: float, ref) -> np.ndarray:
    """Two summation orders of ``dot_loop``: each trip's dot (same inputs in both: x is scaled
    by a kernel) differs by the dot bound ``2 (K + 2) eps sum |x||w|`` times 0.5; each add into
    acc rounds once more (eps of |acc| per trip)."""
    x, w = np.abs(args[2].astype(np.float64)), np.abs(args[3].astype(np.float64))
    x[~np.isfinite(x)] = 0
    product = np.matmul(x, w) * 0.5 * sum(0.75**t for t in range(trips))
    return 2 * (k + 2) * eps * product + 2 * trips * eps * (np.abs(ref) + product)


@needs_blas
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("trips", [0, 1, 9])
def test_dot_loops_native_match_the_python_path(dtype, layout, trips, monkeypatch):
    """BLAS dots: bit for bit. Small matmuls (summed in order of k with fma): the dot bound."""
    lhs, rhs, dnums, path = LAYOUTS[layout]
    module, out_shape = dot_loop(dtype, lhs, rhs, dnums)
    special = layout != "large"
    args = [
        np.int32(trips),
        _floats(dtype, out_shape.dims),
        _floats(dtype, lhs, special),
        _floats(dtype, rhs),
    ]
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"].get("while (native)") == 1, stats
    assert stats["compiled"].get(f"dot ({path})") == 1 and "while" not in stats["compiled"]
    native = exe(*args)
    python = python_path(module, monkeypatch)(*args)
    assert int(native[0]) == trips
    if path == "BLAS" or trips == 0:
        bits_equal(native, python)
        return
    bits_equal([native[0], native[2]], [python[0], python[2]])
    got, ref = np.asarray(native[1]), np.asarray(python[1])
    if len(lhs) == 3 and dnums.lhs_batch_dims == (1,):  # [m, batch, k] -> [batch, m, k]
        args = [args[0], args[1], np.moveaxis(args[2], 1, 0), args[3]]
    if dnums.lhs_contracting_dims == (0,):
        args = [args[0], args[1], args[2].T, args[3]]
    eps = float(np.finfo(got.dtype).eps)
    assert_within(
        got,
        ref,
        loop_tolerance(args, trips, lhs[-1 if layout != "lhs_transposed" else 0], eps, ref),
    )


@needs_blas
def test_pool_threshold_scales_with_the_vector_width():
    """An LSTM's input dot, [16,32]x[32,512] (2^18 products), splits on the pool with AVX2's
    vectors and runs whole with AVX-512's, which do it in half the time (pool_min_products)."""
    assert native_dot.pool_min_products(128) == native_dot.POOL_MIN_PRODUCTS
    assert native_dot.pool_min_products(256) == native_dot.POOL_MIN_PRODUCTS
    assert native_dot.pool_min_products(512) == 2 * native_dot.POOL_MIN_PRODUCTS
    module, _ = dot_loop("f32", [16, 32], [32, 512], MATMUL, name="lstm_input_dot")
    exe = hlort.compile(module, "cpu")
    loops = [s for s, _ in exe.raw.program.schedule if isinstance(s, NativeWhileThunk)]
    assert len(loops) == 1
    assert (loops[0].pool_slots is None) == (jit_engine().target.vector_bits >= 512)


@needs_blas
@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize(
    "dims",
    [
        ([1, 9], [9, 7]),
        ([6, 9], [9, 1]),
        ([1, 9], [9, 1]),
        ([6, 0], [0, 7]),
        ([0, 9], [9, 7]),
        ([1, 9], [1, 9]),
    ],
    ids=str,
)
def test_dot_loops_with_vectors_and_empty_contractions(dtype, dims):
    """One row or column, K = 0 (zeros) and no rows (nothing to compute); one trip, so the
    result is one dot against the interpreter, to the dot tolerance."""
    lhs, rhs = dims
    dnums = MATMUL if lhs[1] == rhs[0] else Dn((1,), (1,))  # the last: BLAS with a row vector
    module, out_shape = dot_loop(dtype, lhs, rhs, dnums)
    acc0 = np.zeros(out_shape.dims, hlort.dtypes.from_hlo_name(dtype).numpy)
    args = [np.int32(1), acc0, _floats(dtype, lhs), _floats(dtype, rhs)]
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["compiled"].get("while (native)") == 1, exe.raw.stats()
    got = exe(*args)
    ref = hlort.evaluate(module, args)
    bits_equal(got[:1] + got[2:], ref[:1] + ref[2:])
    w = args[3] if dnums == MATMUL else args[3].T
    eps = float(np.finfo(acc0.dtype).eps)
    ref1 = np.asarray(ref[1])
    assert_within(np.asarray(got[1]), ref1, loop_tolerance([*args[:3], w], 1, lhs[1], eps, ref1))


@pytest.mark.parametrize("dtype", ["s32", "bf16", "f16"])
def test_dot_loops_of_other_types_take_the_python_path(dtype):
    """Integer and narrow-float dots are not plain BLAS in their own type: the loop runs on the
    Python path (counted as ``while``), exactly as the interpreter for s32."""
    b = Builder("int_dot_loop")
    elem = shape.array(dtype, [4, 4])
    state = shape.tuple_of(shape.scalar("s32"), elem, elem)
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.constant(np.int32(3)), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, acc, w = (bb.get_tuple_element(p, k) for k in range(3))
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(np.int32(1))), bb.dot(acc, w), w]))
    acc0, w0 = b.parameter(elem), b.parameter(elem)
    module = b.build(b.while_loop(cond, body, b.tuple([b.constant(np.int32(0)), acc0, w0])))
    if dtype == "s32":
        args = [RNG.integers(-9, 9, (4, 4)).astype(np.int32) for _ in range(2)]
    else:
        args = [_floats(dtype, [4, 4]) * 0.5 for _ in range(2)]
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["compiled"].get("while") == 1 and "while (native)" not in stats["compiled"]
    assert stats["fallback_count"] == 0, stats
    got, ref = exe(*args), hlort.evaluate(module, args)
    if dtype == "s32":
        bits_equal(got, ref)


def test_dot_whose_operand_needs_a_copy_takes_the_python_path():
    """A free dimension between two contracting ones: no BLAS view, so the DotThunk copies."""
    module, out_shape = dot_loop("f32", [3, 4, 5], [3, 5, 6], Dn((0, 2), (0, 1)))
    args = [
        np.int32(2),
        _floats("f32", out_shape.dims),
        _floats("f32", [3, 4, 5]),
        _floats("f32", [3, 5, 6]),
    ]
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["compiled"].get("while") == 1 and "while (native)" not in stats["compiled"]
    got, ref = exe(*args), hlort.evaluate(module, args)
    np.testing.assert_allclose(np.asarray(got[1]), np.asarray(ref[1]), rtol=1e-5, atol=1e-5)


# -- in-place dynamic-update-slice --------------------------------------------------------------
def stack_loop(index_dtype: str, fixed: tuple[int, int], update_dims, read_stack: bool = False):
    """``for i < n: stack = dynamic-update-slice(stack, f(i, x), [i - 1, fixed...])`` on a
    [6, 4, 5] f32 stack; the two trailing starts are constants of ``index_dtype`` (out of range
    values clamp). ``read_stack`` also reads the stack's old value in the body (no in place)."""
    b = Builder("stack_loop")
    stack_shape, x_shape = shape.array("f32", [6, 4, 5]), shape.array("f32", list(update_dims))
    state = shape.tuple_of(
        shape.scalar(index_dtype), shape.scalar(index_dtype), stack_shape, x_shape
    )
    c = b.sub("cond")
    p = c.parameter(state)
    cond = c.finish(c.compare(c.get_tuple_element(p, 0), c.get_tuple_element(p, 1), "LT"))
    bb = b.sub("body")
    p = bb.parameter(state)
    i, n, stack, x = (bb.get_tuple_element(p, k) for k in range(4))
    x = bb.add(x, bb.broadcast(bb.constant(1.0, "f32"), list(update_dims), []))
    starts = [
        bb.subtract(i, bb.constant(1, index_dtype)),
        *(bb.constant(v, index_dtype) for v in fixed),
    ]
    if read_stack:
        x = bb.add(x, bb.slice(stack, [0, 0, 0], list(update_dims)))
    stack = bb.dynamic_update_slice(stack, x, starts)
    body = bb.finish(bb.tuple([bb.add(i, bb.constant(1, index_dtype)), n, stack, x]))
    n0, s0, x0 = (
        b.parameter(shape.scalar(index_dtype)),
        b.parameter(stack_shape),
        b.parameter(x_shape),
    )
    loop = b.while_loop(cond, body, b.tuple([b.constant(0, index_dtype), n0, s0, x0]))
    return b.build(b.tuple([b.get_tuple_element(loop, k) for k in (0, 2, 3)]))


@pytest.mark.parametrize(
    "index_dtype, fixed",
    [
        ("s32", (0, 0)),
        ("s32", (-5, 2)),
        ("s8", (3, 100)),
        ("s64", (1, -1)),
        ("u32", (4000000000, 1)),
        ("u64", (2**63 + 5, 0)),
        ("u8", (255, 2)),
    ],
)
@pytest.mark.parametrize(
    "update_dims", [[1, 4, 5], [2, 3, 5], [1, 2, 3], [6, 4, 5], [1, 0, 5]], ids=str
)
def test_in_place_stack_updates_match_the_interpreter(index_dtype, fixed, update_dims):
    module = stack_loop(index_dtype, fixed, update_dims)
    n = np.dtype(hlort.dtypes.from_hlo_name(index_dtype).numpy).type(8)
    args = [n, _floats("f32", [6, 4, 5], True), _floats("f32", update_dims)]
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["compiled"].get("while (native)") == 1, stats
    assert stats["compiled"].get("dynamic-update-slice (in place)") == 1, stats
    bits_equal(exe(*args), hlort.evaluate(module, args))
    before = args[1].copy()
    exe(*args)
    bits_equal([args[1]], [before])  # the input stack is the caller's: never written


def test_stack_read_after_its_update_is_not_updated_in_place():
    module = stack_loop("s32", (0, 0), [1, 4, 5], read_stack=True)
    args = [np.int32(5), _floats("f32", [6, 4, 5]), _floats("f32", [1, 4, 5])]
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["compiled"].get("while (native)") == 1, stats
    assert "dynamic-update-slice (in place)" not in stats["compiled"], stats
    bits_equal(exe(*args), hlort.evaluate(module, args))


# -- JAX-lowered RNN scans (rnn_scans/, written by rnn_scans/generate.py) -----------------------
@needs_blas
@pytest.mark.parametrize(
    "name", ["lstm_scan_float32", "lstm_scan_float64", "gru_scan_float32", "gru_scan_float64"]
)
def test_jax_rnn_scans_run_natively(name, monkeypatch):
    with open(os.path.join(HERE, "rnn_scans", f"{name}.mlir")) as f:
        module = parse_program(f.read())
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled"].get("while (native)") == 1 and "while" not in stats["compiled"]
    assert stats["compiled"].get("dot (small matmul)") == 2, stats
    assert stats["compiled"].get("dynamic-update-slice (in place)") == 1, stats
    dtype = np.float32 if name.endswith("32") else np.float64
    args = [
        (RNG.standard_normal(p.shape.dims) * (0.4 if p.shape.rank == 2 else 1)).astype(dtype)
        for p in module.entry.parameters
    ]  # xs, h0 (, c0), weights (scaled), bias
    native = exe(*args)
    tol = 2e-5 if dtype == np.float32 else 1e-13
    for other in (python_path(module, monkeypatch)(*args), hlort.evaluate(module, args)):
        for g, r in zip(native, other, strict=True):
            assert_within(np.asarray(g), np.asarray(r), np.full(np.shape(r), tol))


@needs_blas
def test_native_dot_loops_survive_the_disk_cache():
    """A cache hit replans the loop (small matmul and BLAS dots) without emitting any IR."""
    from hlort_cpu import compile_cache

    for lhs, rhs, dnums, path in (
        ([5, 11], [11, 3], MATMUL, "small matmul"),
        ([5, 11], [3, 11], Dn((1,), (1,)), "BLAS"),
    ):
        module, out_shape = dot_loop("f32", lhs, rhs, dnums)  # shapes no other test compiles
        args = [
            np.int32(4),
            _floats("f32", out_shape.dims),
            _floats("f32", lhs),
            _floats("f32", rhs),
        ]
        first = hlort.compile(module, "cpu")
        compile_cache.clear_memory()
        second = hlort.compile(module, "cpu")
        assert second.raw.stats()["cache_hit"] and not first.raw.stats()["cache_hit"]
        assert second.raw.stats()["compiled"] == first.raw.stats()["compiled"]
        assert first.raw.stats()["compiled"].get(f"dot ({path})") == 1
        bits_equal(second(*args), first(*args))
