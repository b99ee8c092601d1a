"""NPZ inputs/outputs, with bfloat16 and float8 as raw bits."""

import ml_dtypes
import numpy as np
import pytest

from hlort import shape
from hlort.errors import ErrorCode, HlortError
from hlort.runtime.npz_io import read_inputs, write_outputs
from hlort.runtime.sample_inputs import random_inputs


def test_bf16_and_f8_travel_as_raw_bits(tmp_path):
    bf = np.array([1.5, -2, 3.25], ml_dtypes.bfloat16)
    f8 = np.array([0.5, 1], ml_dtypes.float8_e4m3fn)
    path = tmp_path / "in.npz"
    np.savez(path, arg0=bf.view(np.uint16), arg1=f8.view(np.uint8), arg2=np.ones(2, np.int32))
    shapes = [shape.array("bf16", [3]), shape.array("f8e4m3fn", [2]), shape.array("s32", [2])]
    got = read_inputs(path, shapes)
    assert got[0].dtype == ml_dtypes.bfloat16 and np.array_equal(got[0], bf)
    assert got[1].dtype == ml_dtypes.float8_e4m3fn
    out = tmp_path / "out.npz"
    write_outputs(out, got)
    with np.load(out) as z:
        assert z["out0"].dtype == np.uint16 and np.array_equal(z["out0"], bf.view(np.uint16))
        assert z["out1"].dtype == np.uint8 and z["out2"].dtype == np.int32


@pytest.mark.parametrize(
    "arrays, match",
    [
        ({"arg0": np.ones(3, np.float64)}, r"must be f32\[3\].*got float64"),
        ({"arg0": np.ones(4, np.float32)}, r"got float32\[4\]"),
        ({}, "missing arg0"),
        ({"arg0": np.ones(3, np.float32), "arg7": np.ones(1)}, "unexpected arg7"),
    ],
)
def test_wrong_inputs_are_invalid_arguments(tmp_path, arrays, match):
    path = tmp_path / "in.npz"
    np.savez(path, **arrays)
    with pytest.raises(HlortError, match=match) as info:
        read_inputs(path, [shape.array("f32", [3])])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_bf16_given_with_the_wrong_width_names_the_raw_type(tmp_path):
    path = tmp_path / "in.npz"
    np.savez(path, arg0=np.ones(3, np.uint8))
    with pytest.raises(HlortError, match="uint16 raw bits"):
        read_inputs(path, [shape.array("bf16", [3])])


def test_missing_and_unreadable_files(tmp_path):
    with pytest.raises(HlortError) as info:
        read_inputs(tmp_path / "nope.npz", [])
    assert info.value.code is ErrorCode.NOT_FOUND
    junk = tmp_path / "junk.npz"
    junk.write_text("not a zip")
    with pytest.raises(HlortError) as info:
        read_inputs(junk, [])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_random_inputs_are_deterministic_and_typed():
    shapes = [shape.array(d, [2, 3]) for d in ("f32", "bf16", "s8", "u32", "pred", "c64")]
    a, b = random_inputs(shapes, seed=0), random_inputs(shapes, seed=0)
    for x, y, s in zip(a, b, shapes, strict=True):
        assert x.shape == (2, 3) and x.dtype == s.dtype.numpy
        assert np.array_equal(x.view(np.uint8), y.view(np.uint8))
    assert a[3].min() >= 0
