"""Compiled gather and scatter on cpu vs the interpreter.

Gather and an overwriting scatter move data: every bit must match, NaN payloads included.
Combining scatters apply their updates in the interpreter's order (scatter index row-major,
then window row-major), so their floats match bit for bit too; only NaN payloads may differ
there (any NaN matches any NaN, as the conformance suite's "exact" rule). Every case asserts
that nothing ran on the interpreter FALLBACK.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, dtypes, shape  # noqa: E402
from hlort.errors import HlortError  # noqa: E402
from hlort.ir.attributes import GatherDimensionNumbers as GatherDims  # noqa: E402
from hlort.ir.attributes import ScatterDimensionNumbers as ScatterDims  # noqa: E402
from hlort.testing.values import mixed  # noqa: E402
from hlort_cpu.codegen.compiled import compile_kernel_module  # noqa: E402
from hlort_cpu.codegen.kernel_builder import KernelModule, classify  # noqa: E402

DATA_TYPES = [
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
]
INDEX_TYPES = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"]


def salted(dt: str, dims, rng) -> np.ndarray:
    """Random values of ``dt`` with its edge values (NaN, +-inf, -0.0, extremes) shuffled in."""
    flat = mixed(dtypes.from_hlo_name(dt), tuple(dims), rng).reshape(-1)
    return rng.permutation(flat).reshape(dims)


def index_values(dt: str, dims, low: int, high: int, rng) -> np.ndarray:
    """Indices in [low, high] (negative and past-the-end included), wrapped into ``dt``; unsigned
    types also get their largest values (huge starts: clamped by gather, skipped by scatter)."""
    values = rng.integers(low, high + 1, size=dims)
    out = values.astype(np.int64).astype(np.dtype(dtypes.from_hlo_name(dt).numpy))
    if dt.startswith("u") and out.size:
        out.reshape(-1)[0] = np.iinfo(out.dtype).max
    return out


def assert_same(got: np.ndarray, want: np.ndarray, nan_payloads: bool) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    if got.dtype.kind == "c":  # part by part
        part = np.float32 if got.dtype == np.complex64 else np.float64
        got, want = (np.ascontiguousarray(a).reshape(-1).view(part) for a in (got, want))
    if got.dtype.kind not in "fV" and got.dtype.name not in ("bfloat16",):
        np.testing.assert_array_equal(got, want)
        return
    bits = f"u{got.dtype.itemsize}"
    if nan_payloads:
        np.testing.assert_array_equal(got.view(bits), want.view(bits))
        return
    g_nan = np.isnan(got.astype(np.float64))
    w_nan = np.isnan(want.astype(np.float64))
    np.testing.assert_array_equal(g_nan, w_nan)
    np.testing.assert_array_equal(got.view(bits)[~g_nan], want.view(bits)[~w_nan])


def check(module, args, nan_payloads: bool = True, compiled: str | None = None) -> None:
    """Compile on cpu, require no FALLBACK, compare every output with the interpreter."""
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    if compiled is not None:
        assert stats["compiled"].get(compiled, 0) >= 1, stats
    want = hlort.evaluate(module, args)
    got = exe(*args)
    wants = list(want) if isinstance(want, (tuple, list)) else [want]
    gots = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(gots) == len(wants)
    for g, w in zip(gots, wants, strict=True):
        assert_same(np.asarray(g), np.asarray(w), nan_payloads)


# -- gather ---------------------------------------------------------------------------------------
def gather_module(dt: str, operand_dims, idt: str, index_dims, dn: GatherDims, sizes):
    b = Builder("gather")
    x = b.parameter(shape.array(dt, operand_dims))
    idx = b.parameter(shape.array(idt, index_dims))
    return b.build(b.gather(x, idx, dn, sizes))


TAKE_ROWS = GatherDims(
    offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
)


@pytest.mark.parametrize("dt", DATA_TYPES)
def test_gather_embedding_lookup_every_dtype(dt):
    """x[idx] / an embedding lookup: rows of a [V, D] table, out-of-range ids clamped."""
    rng = np.random.default_rng(1)
    module = gather_module(dt, (7, 5), "s32", (9, 1), TAKE_ROWS, (1, 5))
    args = [salted(dt, (7, 5), rng), index_values("s32", (9, 1), -9, 12, rng)]
    check(module, args, compiled="gather")


@pytest.mark.parametrize("idt", INDEX_TYPES)
def test_gather_every_index_type(idt):
    rng = np.random.default_rng(2)
    dn = GatherDims(
        offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1), index_vector_dim=1
    )
    module = gather_module("f32", (6, 5), idt, (11, 2), dn, (2, 3))
    args = [salted("f32", (6, 5), rng), index_values(idt, (11, 2), -4, 8, rng)]
    check(module, args)


def test_gather_take_along_axis_with_batching_dims():
    """take_along_axis as JAX now emits it: operand and indices share a batching dimension."""
    rng = np.random.default_rng(3)
    dn = GatherDims(
        offset_dims=(),
        collapsed_slice_dims=(1,),
        start_index_map=(1,),
        index_vector_dim=2,
        operand_batching_dims=(0,),
        start_indices_batching_dims=(0,),
    )
    module = gather_module("bf16", (4, 6), "s64", (4, 3, 1), dn, (1, 1))
    args = [salted("bf16", (4, 6), rng), index_values("s64", (4, 3, 1), -2, 8, rng)]
    check(module, args)


def test_gather_implicit_index_vector_and_scalar_result():
    rng = np.random.default_rng(4)
    implicit = GatherDims(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
    )
    module = gather_module("s16", (5, 3), "u8", (4,), implicit, (1, 3))
    check(module, [salted("s16", (5, 3), rng), index_values("u8", (4,), 0, 9, rng)])
    scalar = GatherDims(
        offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), index_vector_dim=0
    )
    module = gather_module("f64", (4, 3), "s32", (2,), scalar, (1, 1))
    for idx in ([2, 1], [-1, 7], [9, -3]):
        check(module, [salted("f64", (4, 3), rng), np.array(idx, np.int32)])


def test_gather_empty_shapes():
    rng = np.random.default_rng(5)
    module = gather_module("f32", (5, 4), "s32", (0, 1), TAKE_ROWS, (1, 4))
    check(module, [salted("f32", (5, 4), rng), np.zeros((0, 1), np.int32)])
    module = gather_module("f32", (5, 0), "s32", (3, 1), TAKE_ROWS, (1, 0))
    check(module, [np.zeros((5, 0), np.float32), np.array([[1], [7], [-1]], np.int32)])


def sometimes_zero(rng, high: int) -> int:
    """A size in [1, high], or 0 (an empty dimension) one time in ten."""
    return 0 if rng.random() < 0.1 else int(rng.integers(1, high + 1))


def random_gather(rng):
    """A random valid gather: operand rank 1-3, any start-index map, collapsed and offset dims,
    window sizes, batch rank 0-2 and index-vector position."""
    rank = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 6, size=rank))
    k = int(rng.integers(1, rank + 1))
    start_map = tuple(int(d) for d in rng.permutation(rank)[:k])
    collapsed = tuple(sorted(d for d in start_map if rng.random() < 0.5))
    sizes = [1 if d in collapsed else sometimes_zero(rng, dims[d]) for d in range(rank)]
    batch = [sometimes_zero(rng, 4) for _ in range(int(rng.integers(0, 3)))]
    vector_dim = int(rng.integers(0, len(batch) + 1))
    if k == 1 and rng.random() < 0.3:
        vector_dim = len(batch)
        index_dims = tuple(batch)
    else:
        index_dims = tuple(batch[:vector_dim] + [k] + batch[vector_dim:])
    out_rank = len(batch) + rank - len(collapsed)
    offset = tuple(sorted(int(a) for a in rng.permutation(out_rank)[: rank - len(collapsed)]))
    dn = GatherDims(
        offset_dims=offset,
        collapsed_slice_dims=collapsed,
        start_index_map=start_map,
        index_vector_dim=vector_dim,
    )
    return dims, index_dims, dn, tuple(sizes)


@pytest.mark.parametrize("seed", range(40))
def test_gather_random_dimension_numbers(seed):
    rng = np.random.default_rng(100 + seed)
    dims, index_dims, dn, sizes = random_gather(rng)
    dt = DATA_TYPES[seed % len(DATA_TYPES)]
    idt = INDEX_TYPES[seed % len(INDEX_TYPES)]
    module = gather_module(dt, dims, idt, index_dims, dn, sizes)
    args = [salted(dt, dims, rng), index_values(idt, index_dims, -3, max(dims) + 3, rng)]
    check(module, args)


def test_gather_inside_a_fusion_compiles_as_one_loop_kernel():
    """The elemental emitter generates gather elements: a gather feeding elementwise ops is one
    loop kernel (built directly: the fusion pass does not fuse gathers yet)."""
    rng = np.random.default_rng(6)
    b = Builder("fused_gather")
    x = b.parameter(shape.array("f32", (8, 6)))
    idx = b.parameter(shape.array("s32", (5, 1)))
    g = b.gather(b.negate(x), idx, TAKE_ROWS, (1, 6))
    module = b.build(b.multiply(g, g))
    comp = module.entry
    assert classify(comp) == "loop"
    km = KernelModule("fused_gather")
    km.add("fused_gather", comp)
    _, kernels = compile_kernel_module(km)
    args = [salted("f32", (8, 6), rng), index_values("s32", (5, 1), -3, 10, rng)]
    (got,) = kernels["fused_gather"](*args)
    assert_same(got, hlort.evaluate(module, args), nan_payloads=False)


def test_gather_of_complex_compiles():
    """Complex elements are loaded and stored as a struct of parts (complex_values.py)."""
    module = gather_module("c64", (4, 3), "s32", (2, 1), TAKE_ROWS, (1, 3))
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    args = [(np.arange(12) + 1j).astype(np.complex64).reshape(4, 3), np.array([[3], [-1]], "i4")]
    np.testing.assert_array_equal(exe(*args), hlort.evaluate(module, args))


# -- scatter --------------------------------------------------------------------------------------
SCATTER_ROWS = ScatterDims(
    update_window_dims=(1,),
    inserted_window_dims=(0,),
    scatter_dims_to_operand_dims=(0,),
    index_vector_dim=1,
)


def combiner(b: Builder, kind: str, dt: str):
    """Scatter update computations: a plain op, an overwrite, or arbitrary scalar code."""
    if kind == "set":
        sub = b.sub(f"set_{dt}")
        sub.parameter(shape.scalar(dt))
        return b._comp(sub.finish(sub.parameter(shape.scalar(dt))))
    if kind == "custom":  # current * 2 - update: not a reducer, order-sensitive
        sub = b.sub(f"custom_{dt}")
        cur, upd = sub.parameter(shape.scalar(dt)), sub.parameter(shape.scalar(dt))
        two = sub.constant(np.array(2, dtypes.from_hlo_name(dt).numpy))
        return b._comp(sub.finish(sub.subtract(sub.multiply(cur, two), upd)))
    return b.scalar_computation(kind, dt)


def scatter_module(dt, operand_dims, idt, index_dims, update_dims, dn, kind):
    b = Builder("scatter")
    x = b.parameter(shape.array(dt, operand_dims))
    idx = b.parameter(shape.array(idt, index_dims))
    upd = b.parameter(shape.array(dt, update_dims))
    return b.build(b.scatter([x], idx, [upd], combiner(b, kind, dt), dn))


def scatter_args(dt, operand_dims, idt, index_dims, update_dims, rng, high):
    return [
        salted(dt, operand_dims, rng),
        index_values(idt, index_dims, -2, high, rng),
        salted(dt, update_dims, rng),
    ]


@pytest.mark.parametrize("dt", DATA_TYPES)
@pytest.mark.parametrize("kind", ["set", "add", "maximum"])
def test_scatter_rows_every_dtype(dt, kind):
    """x.at[idx].set / .add / .max with duplicate, negative and out-of-range row ids."""
    rng = np.random.default_rng(7)
    module = scatter_module(dt, (6, 4), "s32", (10, 1), (10, 4), SCATTER_ROWS, kind)
    args = scatter_args(dt, (6, 4), "s32", (10, 1), (10, 4), rng, 8)
    args[1][:4] = [[1], [1], [3], [1]]  # duplicates combine in order
    check(module, args, nan_payloads=kind == "set", compiled="scatter")


@pytest.mark.parametrize("kind", ["multiply", "minimum", "custom"])
@pytest.mark.parametrize("dt", ["s32", "u8", "f16", "bf16", "f32"])
def test_scatter_other_combiners(dt, kind):
    rng = np.random.default_rng(8)
    module = scatter_module(dt, (5, 3), "s64", (12, 1), (12, 3), SCATTER_ROWS, kind)
    args = scatter_args(dt, (5, 3), "s64", (12, 1), (12, 3), rng, 6)
    args[1][:3] = [[2], [2], [2]]
    check(module, args, nan_payloads=False)


@pytest.mark.parametrize("idt", INDEX_TYPES)
def test_scatter_windows_every_index_type(idt):
    """2-D windows at 2-D starts; a window that would cross the edge is skipped whole."""
    rng = np.random.default_rng(9)
    dn = ScatterDims(
        update_window_dims=(1, 2),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=(0, 1),
        index_vector_dim=1,
    )
    module = scatter_module("f32", (6, 5), idt, (9, 2), (9, 2, 3), dn, "add")
    args = scatter_args("f32", (6, 5), idt, (9, 2), (9, 2, 3), rng, 6)
    check(module, args, nan_payloads=False)


def test_scatter_pred_or_and_bitwise():
    rng = np.random.default_rng(10)
    for kind, dt in (("or", "pred"), ("and", "pred"), ("xor", "u16"), ("or", "s8")):
        module = scatter_module(dt, (7,), "s32", (9, 1), (9,), ScatterDims((), (0,), (0,), 1), kind)
        check(module, scatter_args(dt, (7,), "s32", (9, 1), (9,), rng, 8))


def test_scatter_batching_dims():
    """A batched scatter (vmap of x.at[i].add): batch coordinate shared by operand and indices."""
    rng = np.random.default_rng(11)
    dn = ScatterDims(
        update_window_dims=(2,),
        inserted_window_dims=(1,),
        scatter_dims_to_operand_dims=(1,),
        index_vector_dim=2,
        input_batching_dims=(0,),
        scatter_indices_batching_dims=(0,),
    )
    module = scatter_module("s32", (3, 5, 2), "s32", (3, 4, 1), (3, 4, 2), dn, "add")
    check(module, scatter_args("s32", (3, 5, 2), "s32", (3, 4, 1), (3, 4, 2), rng, 6))


def test_scatter_empty_and_scalar_shapes():
    rng = np.random.default_rng(12)
    module = scatter_module("f32", (5, 4), "s32", (0, 1), (0, 4), SCATTER_ROWS, "add")
    check(module, scatter_args("f32", (5, 4), "s32", (0, 1), (0, 4), rng, 6))
    module = scatter_module("f32", (0, 4), "s32", (2, 1), (2, 4), SCATTER_ROWS, "add")
    check(module, scatter_args("f32", (0, 4), "s32", (2, 1), (2, 4), rng, 3))
    whole = ScatterDims(
        update_window_dims=(),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=(),
        index_vector_dim=1,
    )
    module = scatter_module("f64", (), "s32", (4, 0), (4,), whole, "custom")
    check(module, [np.array(1.5), np.zeros((4, 0), np.int32), salted("f64", (4,), rng)])


@pytest.mark.parametrize("dt", ["c64", "c128"])
@pytest.mark.parametrize("kind", ["set", "add", "multiply", "custom"])
def test_scatter_complex(dt, kind):
    """Complex elements move as a struct of parts; add, the naive product (the interpreter's
    multiply, never NumPy's SIMD one) and custom code combine duplicates in order."""
    rng = np.random.default_rng(15)
    module = scatter_module(dt, (6, 4), "s32", (12, 1), (12, 4), SCATTER_ROWS, kind)
    args = scatter_args(dt, (6, 4), "s32", (12, 1), (12, 4), rng, 8)
    args[1][:4] = [[1], [1], [3], [1]]
    check(module, args, nan_payloads=kind == "set", compiled="scatter")
    module = scatter_module(dt, (0, 4), "s32", (2, 1), (2, 4), SCATTER_ROWS, kind)
    check(module, scatter_args(dt, (0, 4), "s32", (2, 1), (2, 4), rng, 3))


def test_scatter_variadic():
    """Two operands updated together by a computation with cross terms (an argmax-style pair)."""
    rng = np.random.default_rng(13)
    b = Builder("scatter2")
    sub = b.sub("keep_larger")
    cv, ci = sub.parameter(shape.scalar("f32")), sub.parameter(shape.scalar("s32"))
    uv, ui = sub.parameter(shape.scalar("f32")), sub.parameter(shape.scalar("s32"))
    take = sub.compare(uv, cv, "GT")
    comp = sub.finish(sub.tuple([sub.select(take, uv, cv), sub.select(take, ui, ci)]))
    x = b.parameter(shape.array("f32", (6, 3)))
    xi = b.parameter(shape.array("s32", (6, 3)))
    idx = b.parameter(shape.array("u32", (8, 1)))
    upd = b.parameter(shape.array("f32", (8, 3)))
    updi = b.parameter(shape.array("s32", (8, 3)))
    module = b.build(b.scatter([x, xi], idx, [upd, updi], b._comp(comp), SCATTER_ROWS))
    args = [
        salted("f32", (6, 3), rng),
        salted("s32", (6, 3), rng),
        index_values("u32", (8, 1), 0, 7, rng),
        salted("f32", (8, 3), rng),
        salted("s32", (8, 3), rng),
    ]
    check(module, args, nan_payloads=True)


def random_scatter(rng):
    """A random valid scatter: operand rank 1-3, inserted and window dims, batch rank 0-2."""
    rank = int(rng.integers(1, 4))
    dims = tuple(int(d) for d in rng.integers(1, 6, size=rank))
    k = int(rng.integers(1, rank + 1))
    to_operand = tuple(int(d) for d in rng.permutation(rank)[:k])
    inserted = tuple(sorted(d for d in to_operand if rng.random() < 0.5))
    window = [d for d in range(rank) if d not in inserted]
    sizes = [sometimes_zero(rng, dims[d]) for d in window]
    batch = [sometimes_zero(rng, 5) for _ in range(int(rng.integers(0, 3)))]
    vector_dim = int(rng.integers(0, len(batch) + 1))
    index_dims = tuple(batch[:vector_dim] + [k] + batch[vector_dim:])
    update_rank = len(batch) + len(window)
    window_axes = sorted(int(a) for a in rng.permutation(update_rank)[: len(window)])
    update_dims = [0] * update_rank
    scatter_axes = [a for a in range(update_rank) if a not in window_axes]
    for a, s in zip(window_axes, sizes, strict=True):
        update_dims[a] = s
    for a, s in zip(scatter_axes, batch, strict=True):
        update_dims[a] = s
    dn = ScatterDims(
        update_window_dims=tuple(window_axes),
        inserted_window_dims=inserted,
        scatter_dims_to_operand_dims=to_operand,
        index_vector_dim=vector_dim,
    )
    return dims, index_dims, tuple(update_dims), dn


@pytest.mark.parametrize("seed", range(40))
def test_scatter_random_dimension_numbers(seed):
    rng = np.random.default_rng(200 + seed)
    dims, index_dims, update_dims, dn = random_scatter(rng)
    dt = DATA_TYPES[seed % len(DATA_TYPES)]
    idt = INDEX_TYPES[seed % len(INDEX_TYPES)]
    kind = ["set", "add", "custom", "maximum"][seed % 4]
    if kind == "custom" and dt == "pred":
        kind = "set"
    try:
        module = scatter_module(dt, dims, idt, index_dims, update_dims, dn, kind)
    except HlortError:
        pytest.skip("the shape rules reject this combination")
    args = scatter_args(dt, dims, idt, index_dims, update_dims, rng, max(dims) + 1)
    check(module, args, nan_payloads=kind == "set")


def test_scatter_large_operand_copies_in_parallel_chunks():
    """More than one copy chunk (the copy runs in parallel, the updates after it)."""
    rng = np.random.default_rng(14)
    n = 200_000
    dn = ScatterDims(
        update_window_dims=(),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
    )
    module = scatter_module("f32", (n,), "s32", (5000, 1), (5000,), dn, "add")
    args = [
        rng.standard_normal(n).astype(np.float32),
        rng.integers(-10, n + 10, size=(5000, 1)).astype(np.int32),
        rng.standard_normal(5000).astype(np.float32),
    ]
    check(module, args)
