"""Shapes: equality ignores layout, text spelling, validation."""

import numpy as np
import pytest

from hlort import dtypes, shape
from hlort.errors import ErrorCode, HlortError
from hlort.shape import ArrayShape, TupleShape


def test_array_shape_basics():
    s = shape.array("f32", [2, 3])
    assert s.rank == 2 and s.size == 6 and s.nbytes == 24
    assert s.to_hlo() == "f32[2,3]"
    assert shape.array("f32", [2, 3], layout=[0, 1]).to_hlo() == "f32[2,3]{0,1}"
    assert shape.scalar("pred").to_hlo() == "pred[]"
    assert shape.array("s8", [0]).size == 0


def test_equality_ignores_layout_but_same_with_layout_does_not():
    a = shape.array("f32", [2, 3], layout=[1, 0])
    b = shape.array("f32", [2, 3], layout=[0, 1])
    assert a == b and hash(a) == hash(b)
    assert not shape.same_with_layout(a, b)
    assert a != shape.array("f64", [2, 3])
    assert a != shape.array("f32", [3, 2])


def test_tuple_and_token():
    t = shape.tuple_of(shape.array("f32", [2]), shape.tuple_of(shape.scalar("s32")), shape.TOKEN)
    assert t.to_hlo() == "(f32[2], (s32[]), token[])"
    assert [s.to_hlo() for s in t.leaf_shapes()] == ["f32[2]", "s32[]", "token[]"]
    assert t == TupleShape(
        (ArrayShape(dtypes.F32, (2,)), TupleShape((shape.scalar("s32"),)), shape.TOKEN)
    )


def test_of_value():
    assert shape.of_value(np.zeros((2, 0), np.int16)) == shape.array("s16", [2, 0])
    v = (np.float32(1), (np.zeros(3, np.bool_),))
    assert shape.of_value(v) == shape.tuple_of(
        shape.scalar("f32"), shape.tuple_of(shape.array("pred", [3]))
    )


@pytest.mark.parametrize("dims,layout", [([-1], None), ([2, 3], [0, 0]), ([2], [1])])
def test_bad_shapes(dims, layout):
    with pytest.raises(HlortError) as err:
        shape.array("f32", dims, layout)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
