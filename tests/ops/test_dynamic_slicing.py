"""dynamic-slice and dynamic-update-slice: shape rules, start-index clamping for every index
type, full/empty/scalar sizes, values for every element type."""

from __future__ import annotations

import numpy as np
import pytest
from data_movement_helpers import ALL, A, S, dslice, ints, invalid, run, same, sample

from hlort.ir import Opcode, infer_shape


# -- dynamic-slice / dynamic-update-slice ----------------------------------------------------------
def test_dynamic_slice_shape_rule():
    ops = [A("f32", [4, 5]), S("s32"), S("u8")]  # index types may differ per operand
    out = infer_shape(Opcode.DYNAMIC_SLICE, ops, {"dynamic_slice_sizes": (2, 5)})
    assert out == A("f32", [2, 5])
    attrs = {"dynamic_slice_sizes": (2, 5)}
    invalid(Opcode.DYNAMIC_SLICE, [A("f32", [4, 5]), S("s32")], attrs, None, "2 scalar start")
    invalid(
        Opcode.DYNAMIC_SLICE,
        [A("f32", [4, 5]), S("s32"), S("f32")],
        attrs,
        None,
        "start index 1",
        "integer scalar",
    )
    invalid(
        Opcode.DYNAMIC_SLICE,
        [A("f32", [4, 5]), S("s32"), A("s32", [1])],
        attrs,
        None,
        "integer scalar",
        "s32[1]",
    )
    invalid(
        Opcode.DYNAMIC_SLICE,
        ops,
        {"dynamic_slice_sizes": (5, 5)},
        None,
        "dynamic_slice_sizes=[5, 5]",
        "f32[4,5]",
    )
    invalid(Opcode.DYNAMIC_SLICE, ops, {"dynamic_slice_sizes": (2,)}, None, "one entry")


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_dynamic_slice_values_every_dtype(dt):
    x = sample(dt, [4, 5])
    assert same(dslice(x, [1, 2], [2, 3], ["s32", "s32"]), x[1:3, 2:5])


@pytest.mark.parametrize(
    "starts, types, expect",
    [
        ([-5, 1], ["s32", "s8"], (0, 1)),  # negative clamps to 0
        ([3, 9], ["s64", "u32"], (2, 2)),  # too large clamps to dim - size
        ([2**63 + 5, 1], ["u64", "u16"], (2, 1)),  # huge unsigned clamps high, no wrap-around
        ([255, 0], ["u8", "u8"], (2, 0)),
        ([-128, -1], ["s8", "s16"], (0, 0)),
    ],
)
def test_dynamic_slice_clamps_start_indices(starts, types, expect):
    x = sample("f32", [4, 5])
    r, c = expect
    assert same(dslice(x, starts, [2, 3], types), x[r : r + 2, c : c + 3])


def test_dynamic_slice_full_and_empty_sizes():
    x = sample("s16", [3, 3])
    assert same(dslice(x, [3, 3], [3, 3], ["s64", "s64"]), x)  # spec example: clamped to 0
    assert same(dslice(x, [7, -7], [0, 2], ["s32", "s32"]), x[0:0, 0:2])
    assert same(run(lambda b, p: b.dynamic_slice(p, [], []), np.float32(3)), np.float32(3))


def test_dynamic_update_slice_shape_rule():
    ops = [A("f32", [4, 5]), A("f32", [2, 5]), S("s32"), S("u64")]
    assert infer_shape(Opcode.DYNAMIC_UPDATE_SLICE, ops, {}) == A("f32", [4, 5])
    invalid(
        Opcode.DYNAMIC_UPDATE_SLICE,
        [A("f32", [4, 5]), A("f32", [5, 1]), S("s32"), S("s32")],
        {},
        None,
        "larger",
        "f32[5,1]",
    )
    invalid(
        Opcode.DYNAMIC_UPDATE_SLICE,
        [A("f32", [4, 5]), A("f16", [1, 1]), S("s32"), S("s32")],
        {},
        None,
        "element type",
    )
    invalid(
        Opcode.DYNAMIC_UPDATE_SLICE, [A("f32", [4, 5]), A("f32", [1]), S("s32")], {}, None, "rank"
    )
    invalid(
        Opcode.DYNAMIC_UPDATE_SLICE,
        [A("f32", [4, 5]), A("f32", [1, 1]), S("s32")],
        {},
        None,
        "2 scalar start",
    )
    invalid(
        Opcode.DYNAMIC_UPDATE_SLICE,
        [A("f32", [4, 5]), A("f32", [1, 1]), S("s32"), S("pred")],
        {},
        None,
        "integer scalar",
    )


def dus(x, u, starts, types):
    def make(b, p, q, *idx):
        return b.dynamic_update_slice(p, q, idx)

    return run(make, x, u, *ints(starts, types))


@pytest.mark.parametrize("dt", ALL, ids=str)
def test_dynamic_update_slice_values_every_dtype(dt):
    x, u = sample(dt, [4, 5], 1), sample(dt, [2, 3], 2)
    expect = x.copy()
    expect[1:3, 2:5] = u
    before = x.copy()
    got = dus(x, u, [1, 2], ["s32", "u8"])
    assert same(got, expect)
    assert same(x, before), "the operand must not be modified"


@pytest.mark.parametrize(
    "starts, types, expect",
    [
        ([-1, 3], ["s64", "s64"], (0, 2)),  # spec example: clamped so the update fits
        ([4, 4], ["s32", "s32"], (2, 2)),
        ([2**64 - 1, 0], ["u64", "s32"], (2, 0)),
        ([200, 1], ["u8", "s8"], (2, 1)),
    ],
)
def test_dynamic_update_slice_clamps(starts, types, expect):
    x, u = np.zeros((4, 4), np.int64), np.ones((2, 2), np.int64)
    r, c = expect
    want = x.copy()
    want[r : r + 2, c : c + 2] = 1
    assert same(dus(x, u, starts, types), want)


def test_dynamic_update_slice_empty_update_and_scalar():
    x = sample("f64", [3, 2])
    assert same(dus(x, np.zeros((0, 2)), [9, 9], ["s32", "s32"]), x)
    got = run(lambda b, p, q: b.dynamic_update_slice(p, q, []), np.float32(1), np.float32(2))
    assert same(got, np.float32(2))
