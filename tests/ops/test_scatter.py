"""scatter in the interpreter: XLA's skip-out-of-bounds-windows rule, deterministic order for
duplicate indices, fast paths for overwrite and single-op combiners, general and variadic
computations (the shape rule: test_scatter_shape_rule.py)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scatter_helpers import (
    BATCH_DN,
    SPEC_DN,
    SPEC_INDICES,
    SPEC_INPUT,
    A,
    S,
    binary,
    overwrite,
    same,
    scatter,
    scatter_reference,
)

from hlort import Builder, dtypes, evaluate
from hlort.ir import Opcode, ScatterDimensionNumbers, patterns
from hlort.ir.computation import Computation


def test_spec_example_add_skips_out_of_bounds_window():
    """Index [0, 9] puts a 2x2 window at column 9 of a 4-wide dimension: skipped, not clamped."""
    got = scatter(
        SPEC_INPUT,
        SPEC_INDICES,
        np.ones((2, 3, 2, 2), np.int64),
        SPEC_DN,
        lambda b: binary(b, Opcode.ADD, "s64"),
    )
    want = np.array(
        [
            [[1, 2], [5, 6], [7, 8], [7, 8]],
            [[10, 11], [12, 13], [14, 15], [16, 17]],
            [[18, 19], [20, 21], [21, 22], [23, 24]],
        ]
    )
    assert same(got, want)


def test_spec_batching_example():
    inputs = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
    indices = np.array(
        [
            [[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
            [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]],
        ]
    )
    got = scatter(
        inputs,
        indices,
        np.ones((2, 2, 3, 2, 2), np.int64),
        BATCH_DN,
        lambda b: binary(b, Opcode.ADD, "s64"),
    )
    want = np.array(
        [
            [
                [[3, 4], [6, 7], [6, 7], [7, 8]],
                [[9, 10], [11, 12], [15, 16], [17, 18]],
                [[17, 18], [19, 20], [22, 23], [24, 25]],
            ],
            [
                [[25, 26], [28, 29], [30, 31], [31, 32]],
                [[35, 36], [38, 39], [38, 39], [39, 40]],
                [[41, 42], [44, 45], [46, 47], [47, 48]],
            ],
        ]
    )
    assert same(got, want)


# -- fast paths ------------------------------------------------------------------------------------
ELEMENT_DN = ScatterDimensionNumbers(
    update_window_dims=(),
    inserted_window_dims=(0,),
    scatter_dims_to_operand_dims=(0,),
    index_vector_dim=1,
)


def sample(dt, dims, seed=0):
    rng = np.random.default_rng(seed)
    if dt.is_pred:
        return rng.random(dims) < 0.5
    if dt.is_integer:
        return rng.integers(0, 50, dims).astype(dt.numpy)
    if dt.is_complex:
        return (rng.integers(-8, 8, dims) + 1j * rng.integers(-8, 8, dims)).astype(dt.numpy)
    return rng.integers(-8, 8, dims).astype(dt.numpy)  # small integers: exact in every float


@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=str)
def test_overwrite_last_update_wins_every_dtype(dt):
    operand, updates = sample(dt, [5], 1), sample(dt, [6], 2)
    indices = np.array([3, 0, 3, 7, -1, 3], np.int32)  # 7 and -1 are out of bounds: skipped
    got = scatter(operand, indices, updates, ELEMENT_DN, lambda b: overwrite(b, dt))
    want = operand.copy()
    want[0], want[3] = updates[1], updates[5]
    assert same(got, want)


@pytest.mark.parametrize("dt", [d for d in dtypes.ALL_DTYPES if not d.is_pred], ids=str)
def test_add_with_duplicates_every_dtype(dt):
    operand, updates = sample(dt, [4], 3), sample(dt, [7], 4)
    indices = np.array([1, 1, 3, 1, 0, 4, 3], np.uint8)
    got = scatter(operand, indices, updates, ELEMENT_DN, lambda b: binary(b, Opcode.ADD, dt))
    want = scatter_reference([operand], indices, [updates], ELEMENT_DN, lambda c, u: c + u)
    assert same(got, want)


@pytest.mark.parametrize(
    "opcode, fn, dt",
    [
        (Opcode.MULTIPLY, np.multiply, "s32"),
        (Opcode.MAXIMUM, np.maximum, "f32"),
        (Opcode.MINIMUM, np.minimum, "bf16"),
        (Opcode.AND, np.bitwise_and, "u8"),
        (Opcode.OR, np.bitwise_or, "s16"),
        (Opcode.AND, np.logical_and, "pred"),
        (Opcode.OR, np.logical_or, "pred"),
        (Opcode.ADD, np.add, "f8e5m2"),
    ],
)
def test_single_op_combiners(opcode, fn, dt):
    d = dtypes.from_hlo_name(dt)
    operand, updates = sample(d, [4], 5), sample(d, [9], 6)
    indices = np.array([[0], [2], [2], [3], [0], [2], [9], [1], [2]], np.int64)
    dn = ScatterDimensionNumbers(
        update_window_dims=(),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
    )
    want = scatter_reference([operand], indices, [updates], dn, lambda c, u: fn(c, u))
    for swap in (False, True):
        got = scatter(operand, indices, updates, dn, lambda b, s=swap: binary(b, opcode, dt, s))
        assert same(got, want)


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
def test_max_min_combiners_order_signed_zeros(dt):
    """Regression: np.maximum.at kept whichever zero it met first; HLO max(-0, +0) is +0."""
    npd = dtypes.from_hlo_name(dt).numpy
    operand = np.array([-0.0, 0.0, -0.0, 5.0], npd)
    updates = np.array([0.0, -0.0, -0.0, -0.0, -0.0], npd)
    indices = np.array([[0], [1], [2], [2], [3]], np.int32)
    got = scatter(operand, indices, updates, ELEMENT_DN, lambda b: binary(b, Opcode.MAXIMUM, dt))
    np.testing.assert_array_equal(np.signbit(got), [False, False, True, False])
    assert got[3] == 5
    got = scatter(operand, indices, updates, ELEMENT_DN, lambda b: binary(b, Opcode.MINIMUM, dt))
    np.testing.assert_array_equal(np.signbit(got), [True, True, True, True])


def test_bf16_add_rounds_after_every_update():
    """Sequential bf16 accumulation: 256 + 1 + 1 + 1 stays 256 (each +1 rounds away)."""
    operand = np.array([256.0], ml_dtypes.bfloat16)
    updates = np.ones(3, ml_dtypes.bfloat16)
    got = scatter(
        operand, np.zeros(3, np.int32), updates, ELEMENT_DN, lambda b: binary(b, Opcode.ADD, "bf16")
    )
    assert same(got, np.array([256.0], ml_dtypes.bfloat16))


# -- general computations --------------------------------------------------------------------------
def keep_current(b: Builder) -> Computation:
    """(cur, upd) -> cur: neither an overwrite nor a single op; the general path, no arithmetic."""
    sub = b.sub("keep")
    cur = sub.parameter(S("s32"))
    sub.parameter(S("s32"))
    return b._comp(sub.finish(cur))


def via_reshape(b: Builder) -> Computation:
    """(cur, upd) -> reshape(upd): an overwrite the recogniser cannot see, and not elementwise,
    so it runs one update at a time."""
    sub = b.sub("via_reshape")
    sub.parameter(S("s32"))
    upd = sub.parameter(S("s32"))
    return b._comp(sub.finish(sub.reshape(upd, [])))


def test_general_paths_without_arithmetic():
    operand = np.arange(5, dtype=np.int32)
    updates = np.array([10, 11, 12, 13], np.int32)
    indices = np.array([2, 4, 2, 9], np.int32)
    got = scatter(operand, indices, updates, ELEMENT_DN, keep_current)
    assert same(got, operand)
    got = scatter(operand, indices, updates, ELEMENT_DN, via_reshape)
    assert same(got, np.array([0, 1, 12, 3, 11], np.int32))


def affine(b: Builder) -> Computation:
    """(cur, upd) -> 2 * cur - upd: order-dependent, so duplicates must apply in index order."""
    sub = b.sub("affine")
    cur, upd = sub.parameter(S("s32")), sub.parameter(S("s32"))
    two = sub.constant(np.int32(2))
    return b._comp(sub.finish(sub.subtract(sub.multiply(two, cur), upd)))


def test_general_computation_in_rounds():
    operand = np.array([1, 2, 3], np.int32)
    indices = np.array([0, 2, 0, 0, 1, 2], np.int32)
    updates = np.array([5, 7, 1, 2, 4, 3], np.int32)
    got = scatter(operand, indices, updates, ELEMENT_DN, affine)
    want = scatter_reference([operand], indices, [updates], ELEMENT_DN, lambda c, u: 2 * c - u)
    assert same(got, want)
    assert got.tolist() == [((1 * 2 - 5) * 2 - 1) * 2 - 2, 2 * 2 - 4, (3 * 2 - 7) * 2 - 3]


def argmax_pair(b: Builder) -> Computation:
    """Variadic (value, index) combiner: keep the larger value, the smaller index on ties."""
    sub = b.sub("argmax")
    v0, i0, v1, i1 = (sub.parameter(S(d)) for d in ("f32", "s32", "f32", "s32"))
    gt = sub.compare(v1, v0, "GT")
    eq = sub.compare(v1, v0, "EQ")
    lt = sub.compare(i1, i0, "LT")
    take = sub.or_(gt, sub.and_(eq, lt))
    return b._comp(sub.finish(sub.tuple([sub.select(take, v1, v0), sub.select(take, i1, i0)])))


def test_variadic_general_computation():
    values = np.zeros(3, np.float32) - 1
    index = np.full(3, -1, np.int32)
    indices = np.array([0, 1, 0, 2, 0, 1], np.int32)
    uv = np.array([3, 1, 5, 2, 5, 0], np.float32)
    ui = np.array([10, 11, 12, 13, 9, 15], np.int32)
    got = scatter([values, index], indices, [uv, ui], ELEMENT_DN, argmax_pair)
    assert same(got[0], np.array([5, 1, 2], np.float32))
    assert same(got[1], np.array([9, 11, 13], np.int32))


def test_variadic_overwrite_and_partial_tuple():
    a, c = np.zeros(4, np.float64), np.zeros(4, np.uint16)
    ua, uc = np.array([1.5, 2.5, 3.5]), np.array([7, 8, 9], np.uint16)
    indices = np.array([3, 1, 3], np.int64)
    got = scatter([a, c], indices, [ua, uc], ELEMENT_DN, lambda b: overwrite(b, "f64", "u16"))
    assert same(got[0], np.array([0, 2.5, 0, 3.5])) and same(
        got[1], np.array([0, 8, 0, 9], np.uint16)
    )

    def first_from_update_second_kept(b):
        sub = b.sub("mixed")
        ps = [sub.parameter(S(d)) for d in ("f64", "u16", "f64", "u16")]
        return b._comp(sub.finish(sub.tuple([ps[2], ps[1]])))

    got = scatter([a, c], indices, [ua, uc], ELEMENT_DN, first_from_update_second_kept)
    assert same(got[0], np.array([0, 2.5, 0, 3.5])) and same(got[1], c)


# -- out of bounds, windows, empties ---------------------------------------------------------------
def test_window_partially_out_of_bounds_is_skipped_whole():
    operand = np.zeros((4, 4), np.int32)
    dn = ScatterDimensionNumbers(
        update_window_dims=(1, 2),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=(0, 1),
        index_vector_dim=1,
    )
    indices = np.array([[2, 2], [3, 0], [0, -1], [2**31 - 1, 0]], np.int32)
    updates = np.ones((4, 2, 2), np.int32) * np.array([1, 10, 100, 1000], np.int32)[:, None, None]
    got = scatter(operand, indices, updates, dn, lambda b: binary(b, Opcode.ADD, "s32"))
    want = operand.copy()
    want[2:4, 2:4] = 1  # only the first window fits; [3, 0] would need rows 3..4
    assert same(got, want)


def test_unsigned_indices_huge_values_skip():
    operand = np.zeros(3, np.float32)
    indices = np.array([2**64 - 1, 1, 2**63], np.uint64)
    got = scatter(
        operand,
        indices,
        np.array([1, 2, 3], np.float32),
        ELEMENT_DN,
        lambda b: binary(b, Opcode.ADD, "f32"),
    )
    assert same(got, np.array([0, 2, 0], np.float32))


def test_empty_updates_and_scalar_operand():
    operand = np.arange(3, dtype=np.float32)
    got = scatter(
        operand,
        np.zeros(0, np.int32),
        np.zeros(0, np.float32),
        ELEMENT_DN,
        lambda b: binary(b, Opcode.ADD, "f32"),
    )
    assert same(got, operand)
    dn = ScatterDimensionNumbers(
        update_window_dims=(),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=(),
        index_vector_dim=1,
    )
    got = scatter(
        np.float32(1),
        np.zeros((3, 0), np.int32),
        np.array([1, 2, 4], np.float32),
        dn,
        lambda b: binary(b, Opcode.ADD, "f32"),
    )
    assert same(got, np.float32(8))


def test_operand_not_modified():
    operand = np.arange(4, dtype=np.int64)
    before = operand.copy()
    scatter(
        operand, np.array([1], np.int32), np.array([9]), ELEMENT_DN, lambda b: overwrite(b, "s64")
    )
    assert same(operand, before)


def test_window_order_follows_scatter_index_first():
    """Updates laid out (window, scatter): duplicates still apply in scatter-index order."""
    operand = np.zeros(3, np.int32)
    dn = ScatterDimensionNumbers(
        update_window_dims=(0,),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=1,
    )
    indices = np.array([1, 0], np.int32)  # window of 2 at 1 (cells 1, 2) then at 0 (cells 0, 1)
    updates = np.array([[1, 2], [3, 4]], np.int32)  # updates[w, s]
    got = scatter(operand, indices, updates, dn, lambda b: overwrite(b, "s32"))
    assert same(got, np.array([2, 4, 3], np.int32))  # cell 1: s=0 wrote 1, then s=1 wrote 4


# -- patterns --------------------------------------------------------------------------------------
def test_patterns():
    b = Builder("m")
    assert patterns.binary_op_of(binary(b, Opcode.ADD, "f32")) is Opcode.ADD
    assert patterns.binary_op_of(binary(b, Opcode.MAXIMUM, "f32", swap=True)) is Opcode.MAXIMUM
    assert patterns.binary_op_of(binary(b, Opcode.SUBTRACT, "f32")) is Opcode.SUBTRACT
    assert patterns.binary_op_of(binary(b, Opcode.SUBTRACT, "f32", swap=True)) is None
    assert patterns.binary_op_of(overwrite(b, "f32")) is None
    assert patterns.is_overwrite(overwrite(b, "f32"))
    assert patterns.is_overwrite(overwrite(b, "f32", "s8", "pred"))
    assert not patterns.is_overwrite(keep_current(b))
    assert not patterns.is_overwrite(binary(b, Opcode.ADD, "f32"))
    assert patterns.is_scalar_elementwise(affine(b))
    assert patterns.is_scalar_elementwise(argmax_pair(b))
    assert not patterns.is_scalar_elementwise(via_reshape(b))


# -- property: random dimension numbers against the reference -------------------------------------
@st.composite
def scatter_cases(draw):
    rank = draw(st.integers(1, 3))
    op_dims = [draw(st.integers(1, 4)) for _ in range(rank)]
    roles = [draw(st.sampled_from(["window", "inserted", "batching"])) for _ in range(rank)]
    batching = [d for d in range(rank) if roles[d] == "batching"]
    inserted = [d for d in range(rank) if roles[d] == "inserted"]
    candidates = [d for d in range(rank) if roles[d] != "batching"]
    to_operand = draw(st.permutations(candidates))[: draw(st.integers(0, len(candidates)))]
    free_sizes = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    kinds = draw(
        st.permutations([("free", s) for s in free_sizes] + [("batch", d) for d in batching])
    )
    k = len(to_operand)
    implicit = k == 1 and draw(st.booleans())
    ivd = len(kinds) if implicit else draw(st.integers(0, len(kinds)))
    idx_dims, batch_pos, scatter_sizes = [], {}, []
    for j, (kind, v) in enumerate(kinds):
        size = v if kind == "free" else op_dims[v]
        idx_dims.append(size)
        scatter_sizes.append(size)
        if kind == "batch":
            batch_pos[v] = j + (0 if implicit or j < ivd else 1)
    if not implicit:
        idx_dims.insert(ivd, k)
    window_sizes = [draw(st.integers(0, op_dims[d])) for d in range(rank) if roles[d] == "window"]
    upd_rank = len(window_sizes) + len(scatter_sizes)
    window_axes = sorted(draw(st.permutations(range(upd_rank)))[: len(window_sizes)])
    upd_dims, w, s = [], iter(window_sizes), iter(scatter_sizes)
    for a in range(upd_rank):
        upd_dims.append(next(w) if a in window_axes else next(s))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    itype = draw(st.sampled_from([np.int32, np.int64, np.uint8, np.int16]))
    lo = 0 if np.issubdtype(itype, np.unsignedinteger) else -2
    indices = rng.integers(lo, max(op_dims) + 1, idx_dims).astype(itype)
    dn = ScatterDimensionNumbers(
        update_window_dims=tuple(window_axes),
        inserted_window_dims=tuple(inserted),
        scatter_dims_to_operand_dims=tuple(to_operand),
        index_vector_dim=ivd,
        input_batching_dims=tuple(batching),
        scatter_indices_batching_dims=tuple(batch_pos[d] for d in batching),
    )
    operand = rng.integers(-100, 100, op_dims).astype(np.int32)
    updates = rng.integers(-100, 100, upd_dims).astype(np.int32)
    return operand, indices, updates, dn


@settings(max_examples=150, deadline=None)
@given(case=scatter_cases(), combiner=st.sampled_from(["add", "overwrite", "keep", "affine"]))
def test_matches_reference(case, combiner):
    operand, indices, updates, dn = case
    make, fn = {
        "add": (lambda b: binary(b, Opcode.ADD, "s32"), lambda c, u: c + u),
        "overwrite": (lambda b: overwrite(b, "s32"), lambda c, u: u),
        "keep": (keep_current, lambda c, u: c),
        "affine": (affine, lambda c, u: np.int32(2) * c - u),
    }[combiner]
    got = scatter(operand, indices, updates, dn, make)
    assert same(got, scatter_reference([operand], indices, [updates], dn, fn))


def _argmax_step(v0, i0, v1, i1):
    take = v1 > v0 or (v1 == v0 and i1 < i0)
    return (v1, i1) if take else (v0, i0)


@settings(max_examples=60, deadline=None)
@given(case=scatter_cases())
def test_variadic_matches_reference(case):
    operand, indices, updates, dn = case
    values = (operand % 7).astype(np.float32)  # few distinct values: ties exercise the indices
    uvalues = (updates % 7).astype(np.float32)
    got = scatter([values, operand], indices, [uvalues, updates], dn, argmax_pair)
    want = scatter_reference([values, operand], indices, [uvalues, updates], dn, _argmax_step)
    assert same(got[0], want[0]) and same(got[1], want[1])


def disguised(b: Builder, opcode: Opcode, dt) -> Computation:
    """``op(cur, copy(upd))``: the same function as :func:`binary`, but not recognised, so it runs
    through the interpreter's own elementwise functions (the general path)."""
    sub = b.sub(f"disguised_{opcode.value}")
    cur, upd = sub.parameter(S(dt)), sub.parameter(S(dt))
    return b._comp(sub.finish(sub.op(opcode, (cur, sub.copy(upd)))))


FAST_CASES = [
    (op, dt)
    for op in (Opcode.ADD, Opcode.MULTIPLY, Opcode.MAXIMUM, Opcode.MINIMUM)
    for dt in ("f32", "bf16", "f16", "s8", "u32", "pred", "f8e4m3fn")
]
FAST_CASES += [
    (op, dt) for op in (Opcode.AND, Opcode.OR, Opcode.XOR) for dt in ("pred", "s8", "u64")
]
FAST_CASES += [(Opcode.ADD, "c64"), (Opcode.MULTIPLY, "c128")]


@pytest.mark.parametrize("opcode, dt", FAST_CASES, ids=lambda v: getattr(v, "value", v))
def test_fast_path_agrees_with_interpreter_ops(opcode, dt):
    """np.<ufunc>.at must compute what the interpreter's own op computes, NaN and -0 included."""
    d = dtypes.from_hlo_name(dt)
    operand, updates = sample(d, [4], 7), sample(d, [12], 8)
    if d.is_float:
        operand[1] = np.nan
        updates[[2, 5]] = [np.nan, -0.0]
        operand[2] = 0.0
    indices = np.array([1, 2, 2, 0, 3, 2, 1, 0, 0, 3, 2, 1], np.int32)
    fast = scatter(operand, indices, updates, ELEMENT_DN, lambda b: binary(b, opcode, dt))
    slow = scatter(operand, indices, updates, ELEMENT_DN, lambda b: disguised(b, opcode, dt))
    assert same(fast, slow)


def test_scalar_index_and_verified_module():
    """A rank-0 index (implicit index vector) and a module that passes the verifier."""
    from hlort.ir import verify_module

    b = Builder("s")
    x = b.parameter(A("f32", [5]))
    i = b.parameter(S("u8"))
    u = b.parameter(S("f32"))
    dn = ScatterDimensionNumbers(
        update_window_dims=(),
        inserted_window_dims=(0,),
        scatter_dims_to_operand_dims=(0,),
        index_vector_dim=0,
    )
    module = b.build(b.scatter([x], i, [u], binary(b, Opcode.MAXIMUM, "f32"), dn))
    verify_module(module)
    got = evaluate(module, [np.zeros(5, np.float32), np.uint8(2), np.float32(3)])
    assert same(got, np.array([0, 0, 3, 0, 0], np.float32))
    got = evaluate(module, [np.zeros(5, np.float32), np.uint8(5), np.float32(3)])
    assert same(got, np.zeros(5, np.float32))
