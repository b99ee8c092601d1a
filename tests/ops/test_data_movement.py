"""broadcast, reshape, transpose, slice, concatenate, pad and reverse (dynamic slices:
test_dynamic_slicing.py): shape rules accept what XLA accepts and reject the rest; the interpreter
matches NumPy, bit for bit, for every element type."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from data_movement_helpers import ALL, A, S, dslice, invalid, run, same, sample
from hypothesis import given, settings
from hypothesis import strategies as st

from hlort import Builder, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode, PadDim, SliceDim, infer_shape


# -- broadcast -------------------------------------------------------------------------------------
def test_broadcast_shape_rule_accepts_exact_sizes():
    out = infer_shape(Opcode.BROADCAST, [A("f32", [3])], {"dimensions": (1,)}, A("f32", [2, 3]))
    assert out == A("f32", [2, 3])
    out = infer_shape(Opcode.BROADCAST, [S("s8")], {"dimensions": ()}, A("s8", [0, 4]))
    assert out == A("s8", [0, 4])


@pytest.mark.parametrize(
    "operand, dims, result, fragment",
    [
        (A("f32", [3]), (1,), A("f32", [2, 4]), "dimensions=[1]"),  # size mismatch
        (A("f32", [1]), (1,), A("f32", [2, 3]), "sizes must be equal"),  # no implicit 1 -> N
        (A("f32", [3]), (2,), A("f32", [2, 3]), "out of range"),
        (A("f32", [3, 3]), (1, 1), A("f32", [3, 3]), "repeats"),
        (A("f32", [3]), (), A("f32", [3]), "one entry per dimension"),
        (A("f32", [3]), (0,), A("f16", [3]), "element type"),
    ],
)
def test_broadcast_shape_rule_rejects(operand, dims, result, fragment):
    invalid(Opcode.BROADCAST, [operand], {"dimensions": dims}, result, fragment, str(operand))


def test_broadcast_needs_declared_shape():
    invalid(Opcode.BROADCAST, [A("f32", [3])], {"dimensions": (0,)}, None, "result shape")


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_broadcast_values_every_dtype(dt):
    x = sample(dt, [2, 3])
    got = run(lambda b, p: b.broadcast(p, [4, 2, 5, 3], [1, 3]), x)
    assert same(got, np.broadcast_to(x[None, :, None, :], (4, 2, 5, 3)))


def test_broadcast_transposing_dimensions_and_scalar():
    x = sample("s32", [2, 3])
    got = run(lambda b, p: b.broadcast(p, [3, 4, 2], [2, 0]), x)
    assert same(got, np.broadcast_to(x.T[:, None, :], (3, 4, 2)))
    got = run(lambda b, p: b.broadcast(p, [2, 0], []), np.float32(7))
    assert same(got, np.full((2, 0), 7, np.float32))
    got = run(lambda b, p: b.broadcast(p, [], []), np.float32(7))
    assert same(got, np.array(7, np.float32))


# -- reshape / transpose ---------------------------------------------------------------------------
def test_reshape_shape_rule():
    assert infer_shape(Opcode.RESHAPE, [A("f32", [2, 3])], {}, A("f32", [3, 1, 2])) == A(
        "f32", [3, 1, 2]
    )
    assert infer_shape(Opcode.RESHAPE, [A("f32", [1, 1])], {}, S("f32")) == S("f32")
    invalid(Opcode.RESHAPE, [A("f32", [2, 3])], {}, A("f32", [7]), "6 elements", "f32[7]")
    invalid(Opcode.RESHAPE, [A("f32", [2, 3])], {}, A("s32", [6]), "element type")


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_reshape_and_transpose_values_every_dtype(dt):
    x = sample(dt, [2, 3, 4])
    assert same(run(lambda b, p: b.reshape(p, [4, 6]), x), x.reshape(4, 6))
    assert same(run(lambda b, p: b.transpose(p, [2, 0, 1]), x), x.transpose(2, 0, 1))


def test_reshape_empty_and_scalar():
    assert same(
        run(lambda b, p: b.reshape(p, [3, 0]), np.zeros((0, 5), np.int8)), np.zeros((3, 0), np.int8)
    )
    assert same(run(lambda b, p: b.reshape(p, []), np.ones((1, 1), np.bool_)), np.array(True))


def test_bitcast_shape_rule():
    result = shape.array("f32", [3, 2], layout=(0, 1))
    assert infer_shape(Opcode.BITCAST, [A("f32", [2, 3])], {}, result) == result
    invalid(Opcode.BITCAST, [A("f32", [2, 3])], {}, A("f32", [7]), "6 elements", "f32[7]")
    # the element type may change at equal width, as in XLA's optimized sort comparators
    assert infer_shape(Opcode.BITCAST, [A("f32", [2, 3])], {}, A("s32", [6])) == A("s32", [6])
    invalid(Opcode.BITCAST, [A("f32", [2, 3])], {}, A("f64", [6]), "bitcast-convert", "32 bits")


def test_bitcast_to_another_type_of_the_same_width_reinterprets_the_bits():
    x = np.array([[1.0, -2.0, 0.5], [-0.0, np.inf, 3.0]], np.float32)
    b = Builder("bitcast_bits")
    p = b.parameter(shape.array("f32", [2, 3]))
    out = b.op(Opcode.BITCAST, (p,), shape.array("s32", [6]))
    assert same(evaluate(b.build(out), [x]), x.reshape(-1).view(np.int32))


@pytest.mark.parametrize("dt", ALL, ids=str)
@pytest.mark.parametrize(
    "source,result,perm",
    [
        ((1, 0), (0, 1), (1, 0)),  # row-major [2,3] read as column-major [3,2]: the transpose
        ((0, 1), (1, 0), (1, 0)),  # column-major [2,3] read as row-major [3,2]: the transpose
        ((0, 1), (0, 1), None),  # both column-major: a reshape of the column-major order
    ],
)
def test_bitcast_reads_memory_order_every_dtype(dt, source, result, perm):
    x = sample(dt, [2, 3])
    b = Builder("bitcast")
    p = b.parameter(shape.array(dt, [2, 3], layout=source))
    out = b.op(Opcode.BITCAST, (p,), shape.array(dt, [3, 2], layout=result))
    got = evaluate(b.build(out), [x])
    want = x.T if perm else x.T.reshape(-1).reshape(2, 3).T
    assert same(got, want)


def test_transpose_shape_rule():
    out = infer_shape(Opcode.TRANSPOSE, [A("f32", [2, 3, 4])], {"dimensions": (2, 0, 1)})
    assert out == A("f32", [4, 2, 3])
    invalid(Opcode.TRANSPOSE, [A("f32", [2, 3])], {"dimensions": (0, 0)}, None, "repeats")
    invalid(Opcode.TRANSPOSE, [A("f32", [2, 3])], {"dimensions": (0,)}, None, "permutation")
    invalid(Opcode.TRANSPOSE, [A("f32", [2, 3])], {"dimensions": (0, 2)}, None, "out of range")


# -- slice -----------------------------------------------------------------------------------------
def test_slice_shape_rule():
    spec = (SliceDim(1, 7, 2), SliceDim(0, 0, 1))
    assert infer_shape(Opcode.SLICE, [A("f32", [8, 3])], {"slice": spec}) == A("f32", [3, 0])
    for bad in [SliceDim(2, 1, 1), SliceDim(0, 9, 1), SliceDim(-1, 2, 1), SliceDim(0, 2, 0)]:
        invalid(Opcode.SLICE, [A("f32", [8])], {"slice": (bad,)}, None, "slice entry 0", "f32[8]")
    invalid(Opcode.SLICE, [A("f32", [8])], {"slice": ()}, None, "rank 1")


def test_builder_slice_rejects_lists_of_different_lengths():
    """Regression: zip() silently dropped the extra entries of a longer list."""
    b = Builder("m")
    x = b.parameter(A("f32", [4]))
    with pytest.raises(HlortError) as err:
        b.slice(x, [0, 1], [2])  # used to build x[0:2] without a word
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and "limits [2]" in err.value.message


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_slice_values_every_dtype(dt):
    x = sample(dt, [5, 6])
    got = run(lambda b, p: b.slice(p, [1, 0], [5, 6], [3, 2]), x)
    assert same(got, x[1:5:3, 0:6:2])


# -- concatenate -----------------------------------------------------------------------------------
def test_concatenate_shape_rule():
    ops = [A("f32", [2, 3]), A("f32", [2, 0]), A("f32", [2, 4])]
    assert infer_shape(Opcode.CONCATENATE, ops, {"dimensions": (1,)}) == A("f32", [2, 7])
    invalid(Opcode.CONCATENATE, ops, {"dimensions": (0,)}, None, "dimension 1", "f32[2,0]")
    invalid(
        Opcode.CONCATENATE,
        [A("f32", [2]), A("s32", [2])],
        {"dimensions": (0,)},
        None,
        "element type",
    )
    invalid(
        Opcode.CONCATENATE, [A("f32", [2]), A("f32", [2, 1])], {"dimensions": (0,)}, None, "rank"
    )
    invalid(Opcode.CONCATENATE, [A("f32", [2])], {"dimensions": (1,)}, None, "out of range")
    invalid(Opcode.CONCATENATE, [A("f32", [2])], {"dimensions": (0, 0)}, None, "exactly one")
    invalid(Opcode.CONCATENATE, [S("f32"), S("f32")], {"dimensions": (0,)}, None, "rank 0")
    invalid(Opcode.CONCATENATE, [], {"dimensions": (0,)}, None, "at least one")


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_concatenate_values_every_dtype(dt):
    xs = [sample(dt, [2, n], n) for n in (3, 0, 1)]
    got = run(lambda b, *ps: b.concatenate(ps, 1), *xs)
    assert same(got, np.concatenate(xs, axis=1))
    assert same(run(lambda b, p: b.concatenate([p], 0), xs[0]), xs[0])


# -- pad -------------------------------------------------------------------------------------------
def test_pad_shape_rule():
    ops = [A("f32", [5, 4]), S("f32")]
    cfg = (PadDim(1, 1, 0), PadDim(-1, -1, 1))
    assert infer_shape(Opcode.PAD, ops, {"padding": cfg}) == A("f32", [7, 5])
    assert infer_shape(Opcode.PAD, [A("f32", [0]), S("f32")], {"padding": (PadDim(0, 0, 3),)}) == A(
        "f32", [0]
    )
    assert infer_shape(
        Opcode.PAD, [A("f32", [2]), S("f32")], {"padding": (PadDim(-3, 0, 1),)}
    ) == A("f32", [0])
    invalid(
        Opcode.PAD,
        [A("f32", [2]), S("f32")],
        {"padding": (PadDim(-4, 0, 1),)},
        None,
        "negative (-1)",
        "f32[2]",
    )
    invalid(
        Opcode.PAD, [A("f32", [2]), S("f32")], {"padding": (PadDim(0, 0, -1),)}, None, "interior"
    )
    invalid(
        Opcode.PAD,
        [A("f32", [2]), S("f16")],
        {"padding": (PadDim(0, 0, 0),)},
        None,
        "padding value",
    )
    invalid(
        Opcode.PAD,
        [A("f32", [2]), A("f32", [1])],
        {"padding": (PadDim(0, 0, 0),)},
        None,
        "padding value",
    )
    invalid(Opcode.PAD, [A("f32", [2]), S("f32")], {"padding": ()}, None, "rank 1")


def pad_reference(x, value, config):
    """Slow, obviously-correct pad: place every element, then crop negative edges."""
    lows = [max(lo, 0) for lo, _, _ in config]
    big = [
        max(lo, 0) + max(hi, 0) + n + max(n - 1, 0) * it
        for (lo, hi, it), n in zip(config, x.shape, strict=True)
    ]
    out = np.full(big, value, dtype=x.dtype)
    for idx in np.ndindex(*x.shape):
        pos = tuple(lo + i * (it + 1) for lo, i, (_, _, it) in zip(lows, idx, config, strict=True))
        out[pos] = x[idx]
    crop = tuple(
        slice(max(-lo, 0), b - max(-hi, 0)) for (lo, hi, _), b in zip(config, big, strict=True)
    )
    return out[crop]


def test_pad_spec_example():
    x = np.array([[0, 0, 0, 0], [0, 1, 2, 0], [0, 3, 4, 0], [0, 5, 6, 0], [0, 0, 0, 0]])
    got = run(lambda b, p, v: b.pad(p, v, [(1, 1, 0), (-1, -1, 1)]), x, np.int64(-1))
    want = np.array(
        [
            [-1, -1, -1, -1, -1],
            [-1, 0, -1, 0, -1],
            [-1, 1, -1, 2, -1],
            [-1, 3, -1, 4, -1],
            [-1, 5, -1, 6, -1],
            [-1, 0, -1, 0, -1],
            [-1, -1, -1, -1, -1],
        ]
    )
    assert same(got, want)


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_pad_values_every_dtype(dt):
    x = sample(dt, [3, 2], 1)
    value = sample(dt, [], 2)
    cfg = [(2, -1, 1), (-1, 3, 2)]
    assert same(run(lambda b, p, v: b.pad(p, v, cfg), x, value), pad_reference(x, value, cfg))


def test_pad_scalar_and_empty():
    assert same(run(lambda b, p, v: b.pad(p, v, []), np.float32(1), np.float32(0)), np.float32(1))
    x = np.zeros((0, 2), np.int32)
    got = run(lambda b, p, v: b.pad(p, v, [(1, 2, 5), (0, 0, 0)]), x, np.int32(9))
    assert same(got, np.full((3, 2), 9, np.int32))
    got = run(lambda b, p, v: b.pad(p, v, [(-2, -1, 0)]), np.arange(3, dtype=np.int8), np.int8(0))
    assert same(got, np.zeros(0, np.int8))


# -- reverse ---------------------------------------------------------------------------------------
def test_reverse_shape_rule():
    assert infer_shape(Opcode.REVERSE, [A("f32", [2, 3])], {"dimensions": (1, 0)}) == A(
        "f32", [2, 3]
    )
    invalid(Opcode.REVERSE, [A("f32", [2, 3])], {"dimensions": (2,)}, None, "out of range")
    invalid(Opcode.REVERSE, [A("f32", [2, 3])], {"dimensions": (1, 1)}, None, "repeats")


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_reverse_values_every_dtype(dt):
    x = sample(dt, [2, 3, 2])
    assert same(run(lambda b, p: b.reverse(p, [0, 2]), x), x[::-1, :, ::-1])
    assert same(run(lambda b, p: b.reverse(p, []), x), x)


def test_results_do_not_alias_operands():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for make in (
        lambda b, p: b.reshape(p, [3, 2]),
        lambda b, p: b.slice(p, [0, 0], [2, 3]),
        lambda b, p: b.transpose(p, [0, 1]),
        lambda b, p: b.reverse(p, []),
    ):
        out = run(make, x)
        assert not np.shares_memory(out, x)


def test_float8_and_bf16_bits_survive():
    """Data movement never converts: NaN payloads and -0 come through unchanged."""
    raw = np.array([0x7FC1, 0x8000, 0xFF81, 0x0001], np.uint16).view(ml_dtypes.bfloat16)
    got = run(lambda b, p: b.reverse(p, [0]), raw)
    assert same(got, raw[::-1])
    raw8 = np.array([0x7F, 0x80, 0x01, 0xFF], np.uint8).view(ml_dtypes.float8_e4m3fn)
    got = run(lambda b, p, v: b.pad(p, v, [(1, 0, 1)]), raw8, raw8[1])
    want = np.array([0x80, 0x7F, 0x80, 0x80, 0x80, 0x01, 0x80, 0xFF], np.uint8)
    assert same(got, want.view(ml_dtypes.float8_e4m3fn))


# -- properties against NumPy ----------------------------------------------------------------------
dims_st = st.lists(st.integers(0, 4), min_size=0, max_size=3)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dims=dims_st)
def test_slice_matches_numpy(data, dims):
    x = sample("s32", dims, 3)
    starts, limits, strides = [], [], []
    for n in dims:
        a = data.draw(st.integers(0, n))
        starts.append(a)
        limits.append(data.draw(st.integers(a, n)))
        strides.append(data.draw(st.integers(1, 3)))
    got = run(lambda b, p: b.slice(p, starts, limits, strides), x)
    want = x[tuple(slice(a, z, s) for a, z, s in zip(starts, limits, strides, strict=True))]
    assert same(got, want)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), dims=dims_st)
def test_pad_matches_reference(data, dims):
    x = sample("f32", dims, 4)
    cfg = []
    for n in dims:
        it = data.draw(st.integers(0, 2))
        full = n + max(n - 1, 0) * it
        lo = data.draw(st.integers(-full, 3))
        hi = data.draw(st.integers(-(full + lo), 3))
        cfg.append((lo, hi, it))
    got = run(lambda b, p, v: b.pad(p, v, cfg), x, np.float32(-0.5))
    assert same(got, pad_reference(x, np.float32(-0.5), cfg))


@settings(max_examples=40, deadline=None)
@given(data=st.data(), dims=dims_st)
def test_reverse_transpose_dynamic_slice_match_numpy(data, dims):
    x = sample("u16", dims, 5)
    rank = len(dims)
    rev = data.draw(st.lists(st.integers(0, max(rank - 1, 0)), unique=True, max_size=rank))
    rev = [d for d in rev if d < rank]
    assert same(run(lambda b, p: b.reverse(p, rev), x), np.flip(x, axis=tuple(rev)))
    perm = data.draw(st.permutations(range(rank)))
    assert same(run(lambda b, p: b.transpose(p, perm), x), np.transpose(x, perm))
    sizes = [data.draw(st.integers(0, n)) for n in dims]
    starts = [data.draw(st.integers(-3, n + 3)) for n in dims]
    want_starts = [min(max(s, 0), n - z) for s, n, z in zip(starts, dims, sizes, strict=True)]
    want = x[tuple(slice(s, s + z) for s, z in zip(want_starts, sizes, strict=True))]
    assert same(dslice(x, starts, sizes, ["s32"] * rank), want)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), dims=dims_st)
def test_broadcast_matches_numpy(data, dims):
    x = sample("c64", dims, 6)
    extra = data.draw(st.lists(st.integers(0, 3), max_size=2))
    out_rank = len(dims) + len(extra)
    where = sorted(data.draw(st.permutations(range(out_rank)))[: len(dims)])
    where = data.draw(st.permutations(where))  # any (unique) mapping, not only increasing
    out_dims = [0] * out_rank
    rest = iter(extra)
    for r in range(out_rank):
        out_dims[r] = dims[where.index(r)] if r in where else next(rest)
    got = run(lambda b, p: b.broadcast(p, out_dims, where), x)
    want = np.zeros(out_dims, x.dtype)
    for idx in np.ndindex(*out_dims):
        want[idx] = x[tuple(idx[w] for w in where)]
    assert same(got, want)


def test_module_with_every_op_verifies():
    from hlort.ir import verify_module

    b = Builder("all")
    x = b.parameter(A("f32", [2, 3]))
    i = b.parameter(S("s32"))
    y = b.broadcast(x, [4, 2, 3], [1, 2])
    y = b.reshape(y, [8, 3])
    y = b.transpose(y, [1, 0])
    y = b.slice(y, [0, 1], [3, 8], [1, 2])
    y = b.dynamic_slice(y, [i, i], [2, 2])
    y = b.dynamic_update_slice(y, b.slice(y, [0, 0], [1, 1]), [i, i])
    y = b.concatenate([y, y], 0)
    y = b.pad(y, b.constant(np.float32(0)), [(1, -1, 1), (0, 2, 0)])
    module = b.build(b.reverse(y, [0, 1]))
    verify_module(module)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = evaluate(module, [xv, np.int32(1)])
    want = np.broadcast_to(xv, (4, 2, 3)).reshape(8, 3).T[0:3, 1:8:2][1:3, 1:3].copy()
    want[1, 1] = want[0, 0]
    want = pad_reference(np.concatenate([want, want]), np.float32(0), [(1, -1, 1), (0, 2, 0)])
    assert same(got, want[::-1, ::-1])
