"""gather: the shape rule implements XLA's dimension-number constraints (batching dims included),
and the interpreter matches the StableHLO spec's examples and a slow element-by-element reference,
with start indices clamped so each slice fits, as XLA does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hlort import Builder, dtypes, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import GatherDimensionNumbers, Opcode, infer_shape

A = shape.array


def sample(dt, dims, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dims = tuple(dims)
    if dt.is_pred:
        return rng.random(dims) < 0.5
    if dt.is_integer:
        return rng.integers(0, 100, dims).astype(dt.numpy)
    if dt.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dt.numpy)
    return (rng.standard_normal(dims) * 4).astype(dt.numpy)


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return (
        a.dtype == b.dtype
        and a.shape == b.shape
        and bool(
            np.array_equal(
                np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                np.ascontiguousarray(b).reshape(-1).view(np.uint8),
            )
        )
    )


def gather(operand, indices, dn, slice_sizes):
    b = Builder("g")
    p = b.parameter(shape.of_value(operand))
    i = b.parameter(shape.of_value(indices))
    module = b.build(b.gather(p, i, dn, slice_sizes))
    return evaluate(module, [operand, indices])


def gather_reference(operand, indices, dn, slice_sizes):
    """The spec's formula, one result element at a time, with XLA's clamping."""
    ivd = dn.index_vector_dim
    idx = indices[..., None] if ivd == indices.ndim else indices
    batch_shape = [d for i, d in enumerate(idx.shape) if i != ivd]
    skip = set(dn.collapsed_slice_dims) | set(dn.operand_batching_dims)
    offset_sizes = [s for d, s in enumerate(slice_sizes) if d not in skip]
    rank = len(batch_shape) + len(dn.offset_dims)
    dims, bs, os_ = [], iter(batch_shape), iter(offset_sizes)
    for a in range(rank):
        dims.append(next(os_) if a in dn.offset_dims else next(bs))
    out = np.zeros(dims, operand.dtype)
    for ri in np.ndindex(*dims):
        batch_index = [ri[a] for a in range(rank) if a not in dn.offset_dims]
        full = [0] * operand.ndim
        for k, d in enumerate(dn.start_index_map):
            where = tuple(batch_index[:ivd]) + (k,) + tuple(batch_index[ivd:])
            start = int(idx[where])
            full[d] = min(max(start, 0), operand.shape[d] - slice_sizes[d])
        for od, idim in zip(dn.operand_batching_dims, dn.start_indices_batching_dims, strict=True):
            full[od] += batch_index[idim - (idim > ivd)]
        offsets = iter(ri[a] for a in dn.offset_dims)
        for d in range(operand.ndim):
            if d not in skip:
                full[d] += next(offsets)
        out[ri] = operand[tuple(full)]
    return out


def invalid(operands, dn, sizes, *fragments):
    with pytest.raises(HlortError) as err:
        infer_shape(
            Opcode.GATHER,
            operands,
            {"gather_dimension_numbers": dn, "slice_sizes": sizes, "indices_are_sorted": False},
        )
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    text = str(err.value)
    assert "gather" in text
    for f in fragments:
        assert f in text, text


SPEC_DN = GatherDimensionNumbers(
    offset_dims=(2, 3), collapsed_slice_dims=(0,), start_index_map=(1, 0), index_vector_dim=2
)
SPEC_OPERAND = np.arange(1, 25, dtype=np.int64).reshape(3, 4, 2)
SPEC_INDICES = np.array([[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]], np.int64)
SPEC_RESULT = np.array(
    [
        [[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
        [[[9, 10], [11, 12]], [[11, 12], [13, 14]], [[17, 18], [19, 20]]],
    ]
)

BATCH_DN = GatherDimensionNumbers(
    offset_dims=(3, 4),
    collapsed_slice_dims=(1,),
    start_index_map=(2, 1),
    index_vector_dim=3,
    operand_batching_dims=(0,),
    start_indices_batching_dims=(1,),
)


# -- shape rule ------------------------------------------------------------------------------------
def test_shape_rule_spec_examples():
    out = infer_shape(
        Opcode.GATHER,
        [A("s64", [3, 4, 2]), A("s64", [2, 3, 2])],
        {"gather_dimension_numbers": SPEC_DN, "slice_sizes": (1, 2, 2)},
    )
    assert out == A("s64", [2, 3, 2, 2])
    attrs = {"gather_dimension_numbers": BATCH_DN, "slice_sizes": (1, 1, 2, 2)}
    out = infer_shape(Opcode.GATHER, [A("s64", [2, 3, 4, 2]), A("u8", [2, 2, 3, 2])], attrs)
    assert out == A("s64", [2, 2, 3, 2, 2])


def test_shape_rule_implicit_index_vector_dim():
    dn = GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
    )
    out = infer_shape(
        Opcode.GATHER,
        [A("f32", [5, 3]), A("s32", [4])],
        {"gather_dimension_numbers": dn, "slice_sizes": (1, 3)},
    )
    assert out == A("f32", [4, 3])


def _dn(**changes):
    base = dict(
        offset_dims=(2, 3), collapsed_slice_dims=(0,), start_index_map=(1, 0), index_vector_dim=2
    )
    base.update(changes)
    return GatherDimensionNumbers(**base)


OPS = [A("f32", [3, 4, 2]), A("s32", [2, 3, 2])]


@pytest.mark.parametrize(
    "dn, sizes, operands, fragments",
    [
        (_dn(), (1, 2), OPS, ["slice_sizes=[1, 2]", "f32[3,4,2]"]),
        (_dn(), (1, 5, 2), OPS, ["slice_sizes=[1, 5, 2]", "entry 1"]),
        (_dn(), (2, 2, 2), OPS, ["collapsed or batching dimension 0"]),
        (_dn(offset_dims=(3, 2)), (1, 2, 2), OPS, ["offset_dims=[3, 2]", "ascending"]),
        (_dn(offset_dims=(2, 4)), (1, 2, 2), OPS, ["offset_dims=[2, 4]", "out of range"]),
        (_dn(offset_dims=(2,)), (1, 2, 2), OPS, ["must together have"]),
        (_dn(collapsed_slice_dims=(0, 0)), (1, 2, 2), OPS, ["collapsed_slice_dims", "repeats"]),
        (_dn(start_index_map=(1, 1)), (1, 2, 2), OPS, ["start_index_map", "repeats"]),
        (_dn(start_index_map=(1,)), (1, 2, 2), OPS, ["start_index_map=[1]", "2 entries"]),
        (_dn(start_index_map=(1, 3)), (1, 2, 2), OPS, ["start_index_map", "out of range"]),
        (_dn(index_vector_dim=4), (1, 2, 2), OPS, ["index_vector_dim=4", "s32[2,3,2]"]),
        (_dn(), (1, 2, 2), [OPS[0], A("f32", [2, 3, 2])], ["integer", "f32[2,3,2]"]),
        (
            _dn(operand_batching_dims=(0,), start_indices_batching_dims=(0,)),
            (1, 2, 2),
            OPS,
            ["disjoint"],
        ),
        (
            _dn(
                collapsed_slice_dims=(),
                operand_batching_dims=(0,),
                start_index_map=(1, 2),
                start_indices_batching_dims=(0,),
            ),
            (1, 2, 2),
            OPS,
            ["same size", "(size 3)"],
        ),
        (
            _dn(
                collapsed_slice_dims=(),
                operand_batching_dims=(0,),
                start_index_map=(1, 2),
                start_indices_batching_dims=(2,),
            ),
            (1, 2, 2),
            OPS,
            ["index_vector_dim"],
        ),
        (
            _dn(
                collapsed_slice_dims=(),
                operand_batching_dims=(0,),
                start_index_map=(1, 2),
                start_indices_batching_dims=(),
            ),
            (1, 2, 2),
            OPS,
            ["same length"],
        ),
        (
            _dn(
                collapsed_slice_dims=(),
                operand_batching_dims=(1,),
                start_index_map=(1, 0),
                start_indices_batching_dims=(0,),
            ),
            (1, 1, 2),
            OPS,
            ["start_index_map"],
        ),
    ],
)
def test_shape_rule_rejects(dn, sizes, operands, fragments):
    invalid(operands, dn, sizes, *fragments)


# -- values ----------------------------------------------------------------------------------------
def test_spec_example_with_clamping():
    """The [0, 9] start is clamped to [0, 2] in dimension 1 (4 - 2), giving rows 2..3."""
    got = gather(SPEC_OPERAND, SPEC_INDICES, SPEC_DN, (1, 2, 2))
    assert same(got, SPEC_RESULT.astype(np.int64))
    assert same(got, gather_reference(SPEC_OPERAND, SPEC_INDICES, SPEC_DN, (1, 2, 2)))


def test_spec_batching_example():
    operand = np.arange(1, 49, dtype=np.int64).reshape(2, 3, 4, 2)
    indices = np.array(
        [
            [[[0, 0], [1, 0], [2, 1]], [[0, 1], [1, 1], [0, 9]]],
            [[[0, 0], [2, 1], [2, 2]], [[1, 2], [0, 1], [1, 0]]],
        ]
    )
    want = np.array(
        [
            [
                [[[1, 2], [3, 4]], [[3, 4], [5, 6]], [[13, 14], [15, 16]]],
                [[[33, 34], [35, 36]], [[35, 36], [37, 38]], [[41, 42], [43, 44]]],
            ],
            [
                [[[1, 2], [3, 4]], [[13, 14], [15, 16]], [[21, 22], [23, 24]]],
                [[[43, 44], [45, 46]], [[33, 34], [35, 36]], [[27, 28], [29, 30]]],
            ],
        ]
    )
    got = gather(operand, indices, BATCH_DN, (1, 1, 2, 2))
    assert same(got, want)
    assert same(got, gather_reference(operand, indices, BATCH_DN, (1, 1, 2, 2)))


@pytest.mark.parametrize("dt", dtypes.ALL_DTYPES, ids=str)
def test_every_dtype(dt):
    operand = sample(dt, [3, 4, 2], 1)
    got = gather(operand, SPEC_INDICES.astype(np.int32), SPEC_DN, (1, 2, 2))
    assert same(got, gather_reference(operand, SPEC_INDICES, SPEC_DN, (1, 2, 2)))


@pytest.mark.parametrize("it", ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"])
def test_index_types_and_clamping(it):
    """A numpy-style take along axis 0 (implicit index vector), clamped at both ends."""
    operand = np.arange(10, dtype=np.float32).reshape(5, 2)
    dn = GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
    )
    info = np.iinfo(dtypes.from_hlo_name(it).numpy)
    raw = [0, 4, 2, info.max, 3] + ([info.min, -1] if info.min < 0 else [])
    indices = np.array(raw, dtype=info.dtype)
    want_rows = [min(max(int(v), 0), 4) for v in indices]
    got = gather(operand, indices, dn, (1, 2))
    assert same(got, operand[want_rows])


def test_window_clamped_not_wrapped():
    """A 3-wide window starting at 4 in a 5-element dimension starts at 2 instead."""
    operand = np.arange(5, dtype=np.int32)
    dn = GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(), start_index_map=(0,), index_vector_dim=1
    )
    got = gather(operand, np.array([[4], [-3], [1]], np.int64), dn, (3,))
    assert same(got, np.array([[2, 3, 4], [0, 1, 2], [1, 2, 3]], np.int32))


def test_empty_indices_and_zero_slices():
    operand = sample(dtypes.F32, [4, 3])
    dn = GatherDimensionNumbers(
        offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
    )
    assert same(gather(operand, np.zeros(0, np.int32), dn, (1, 3)), np.zeros((0, 3), np.float32))
    assert same(
        gather(operand, np.array([1, 2], np.int32), dn, (1, 0)), np.zeros((2, 0), np.float32)
    )


def test_scalar_index_and_empty_start_index_map():
    """No start indices at all: every batch element gets the same (full) slice."""
    operand = sample(dtypes.S16, [2, 3])
    dn = GatherDimensionNumbers(
        offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(), index_vector_dim=1
    )
    got = gather(operand, np.zeros((4, 0), np.int32), dn, (2, 3))
    assert same(got, np.broadcast_to(operand, (4, 2, 3)))
    dn = GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 1), index_vector_dim=0
    )
    got = gather(operand, np.array([1, 2], np.uint8), dn, (1, 1))
    assert same(got, operand[1, 2])


def test_gather_from_scalar_operand():
    dn = GatherDimensionNumbers(
        offset_dims=(), collapsed_slice_dims=(), start_index_map=(), index_vector_dim=1
    )
    got = gather(np.array(2.5, np.float64), np.zeros((3, 0), np.int32), dn, ())
    assert same(got, np.full(3, 2.5))


# -- property: random dimension numbers against the reference -------------------------------------
@st.composite
def gather_cases(draw):
    """Random valid gathers: roles for each operand dim, batching pairs, any index_vector_dim."""
    rank = draw(st.integers(1, 3))
    op_dims = [draw(st.integers(1, 4)) for _ in range(rank)]
    roles = [draw(st.sampled_from(["offset", "collapsed", "batching"])) for _ in range(rank)]
    batching = [d for d in range(rank) if roles[d] == "batching"]
    collapsed = [d for d in range(rank) if roles[d] == "collapsed"]
    candidates = [d for d in range(rank) if roles[d] != "batching"]
    start_map = draw(st.permutations(candidates))[: draw(st.integers(0, len(candidates)))]
    n_free = draw(st.integers(0, 2))
    free_sizes = [draw(st.integers(0, 3)) for _ in range(n_free)]
    kinds = draw(
        st.permutations([("free", s) for s in free_sizes] + [("batch", d) for d in batching])
    )
    k = len(start_map)
    implicit = k == 1 and draw(st.booleans())
    ivd = len(kinds) if implicit else draw(st.integers(0, len(kinds)))
    idx_dims, batch_pos = [], {}
    for j, (kind, v) in enumerate(kinds):
        pos = j + (0 if implicit or j < ivd else 1)
        idx_dims.append(v if kind == "free" else op_dims[v])
        if kind == "batch":
            batch_pos[v] = pos
    if not implicit:
        idx_dims.insert(ivd, k)
    sizes = [1 if roles[d] != "offset" else draw(st.integers(0, op_dims[d])) for d in range(rank)]
    n_offset = roles.count("offset")
    out_rank = n_offset + len(kinds)
    offset_dims = sorted(draw(st.permutations(range(out_rank)))[:n_offset])
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    hi = max(op_dims) + 2
    itype = draw(st.sampled_from([np.int32, np.int64, np.uint8, np.int8]))
    lo = 0 if np.issubdtype(itype, np.unsignedinteger) else -2
    indices = rng.integers(lo, hi, idx_dims).astype(itype)
    dn = GatherDimensionNumbers(
        offset_dims=tuple(offset_dims),
        collapsed_slice_dims=tuple(collapsed),
        start_index_map=tuple(start_map),
        index_vector_dim=ivd,
        operand_batching_dims=tuple(batching),
        start_indices_batching_dims=tuple(batch_pos[d] for d in batching),
    )
    operand = rng.integers(-1000, 1000, op_dims).astype(np.int32)
    return operand, indices, dn, tuple(sizes)


@settings(max_examples=150, deadline=None)
@given(case=gather_cases())
def test_matches_reference(case):
    operand, indices, dn, sizes = case
    assert same(gather(operand, indices, dn, sizes), gather_reference(operand, indices, dn, sizes))
