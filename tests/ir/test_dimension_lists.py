"""The shared checker of integer-list attributes: whatever Python value an attribute holds, a bad
one is INVALID_ARGUMENT naming the attribute, never a TypeError from ``len`` or ``iter``."""

import numpy as np
import pytest

from hlort import Builder
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Computation, DotDimensionNumbers, FftType, Opcode, infer_shape
from hlort.shape import array, scalar

X = array("f32", [2, 3])


def _add() -> Computation:
    return Builder("b").scalar_computation("add", "f32")


CASES = {
    "broadcast": (Opcode.BROADCAST, [X], "dimensions", {}, array("f32", [2, 3, 4])),
    "transpose": (Opcode.TRANSPOSE, [X], "dimensions", {}, None),
    "reverse": (Opcode.REVERSE, [X], "dimensions", {}, None),
    "concatenate": (Opcode.CONCATENATE, [X, X], "dimensions", {}, None),
    "reduce": (Opcode.REDUCE, [X, scalar("f32")], "dimensions", {"to_apply": _add()}, None),
    "dynamic-slice": (
        Opcode.DYNAMIC_SLICE,
        [X, scalar("s32"), scalar("s32")],
        "dynamic_slice_sizes",
        {},
        None,
    ),
    "map": (Opcode.MAP, [X, X], "dimensions", {"to_apply": _add()}, None),
    "fft": (Opcode.FFT, [array("c64", [4])], "fft_length", {"fft_type": FftType.FFT}, None),
}


@pytest.mark.parametrize("bad", [5, None, "01", (1.0, 0.0), (True,)], ids=repr)
@pytest.mark.parametrize("case", sorted(CASES))
def test_non_integer_lists_are_invalid_argument(case, bad):
    opcode, operands, key, attrs, declared = CASES[case]
    with pytest.raises(HlortError) as err:
        infer_shape(opcode, operands, {**attrs, key: bad}, declared)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert f"{key}={bad!r} must be a sequence of integers" in str(err.value)


def test_dot_dimension_numbers_fields_are_checked_the_same_way():
    dn = DotDimensionNumbers(lhs_contracting_dims=5, rhs_contracting_dims=(0,))
    with pytest.raises(HlortError, match="lhs_contracting_dims=5 must be a sequence of integers"):
        infer_shape(Opcode.DOT, [X, array("f32", [3, 2])], {"dot_dimension_numbers": dn})


def test_numpy_integers_are_integers():
    dims = np.array([1], np.int64)
    assert infer_shape(
        Opcode.REDUCE, [X, scalar("f32")], {"dimensions": dims, "to_apply": _add()}
    ) == array("f32", [2])
    assert infer_shape(Opcode.REVERSE, [X], {"dimensions": (np.int32(0),)}) == X


def test_range_and_repeats_name_the_array():
    with pytest.raises(HlortError, match=r"has dimension 2, out of range for rank 2 of input 0"):
        infer_shape(Opcode.REDUCE, [X, scalar("f32")], {"dimensions": (2,), "to_apply": _add()})
    with pytest.raises(HlortError, match="repeats a dimension of operand"):
        infer_shape(Opcode.REVERSE, [X], {"dimensions": (1, 1)})
