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


def test_scalars_stay_scalars_in_random_inputs_and_raw_bits(tmp_path):
    # np.ascontiguousarray turns 0-d arrays into shape (1,): scalar parameters used to fail
    shapes = [shape.array(d, []) for d in ("f32", "bf16", "s32", "f8e5m2")]
    assert [a.shape for a in random_inputs(shapes, seed=0)] == [()] * 4
    path = tmp_path / "in.npz"
    bf = np.array(1.5, ml_dtypes.bfloat16)
    np.savez(path, arg0=bf.view(np.uint16))
    (got,) = read_inputs(path, [shape.array("bf16", [])])
    assert got.shape == () and got.dtype == ml_dtypes.bfloat16 and got == bf
    write_outputs(tmp_path / "out.npz", [got])
    with np.load(tmp_path / "out.npz") as z:
        assert z["out0"].shape == () and z["out0"].dtype == np.uint16


def test_wrong_raw_bits_report_the_stored_dtype(tmp_path):
    path = tmp_path / "in.npz"
    np.savez(path, arg0=np.zeros((3, 2), np.uint16))
    with pytest.raises(HlortError, match=r"got uint16\[3, 2\]"):
        read_inputs(path, [shape.array("bf16", [2, 3])])


def test_outputs_go_to_exactly_the_named_file(tmp_path):
    write_outputs(tmp_path / "result", [np.ones(2, np.float32)])  # np.savez would add .npz
    assert (tmp_path / "result").is_file() and not (tmp_path / "result.npz").exists()


@pytest.mark.parametrize("name", ["missing_dir/out.npz", "."])
def test_unwritable_output_paths_are_invalid_arguments(tmp_path, name):
    with pytest.raises(HlortError) as info:
        write_outputs(tmp_path / name, [np.ones(2, np.float32)])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT


def test_a_file_that_is_not_an_archive_says_so(tmp_path):
    junk = tmp_path / "in.npz"
    junk.write_text("hello")
    with pytest.raises(HlortError, match="neither an .npz") as info:
        read_inputs(junk, [])
    assert "pickle" not in info.value.message and "np.savez" in info.value.message


def test_ml_dtypes_arrays_saved_as_is_are_read_as_their_raw_bits(tmp_path):
    # np.savez stores a bfloat16 array as void (|V2): the bytes are exactly the raw bits
    bf = np.array([[1.5, -2, 3.25]], ml_dtypes.bfloat16)
    np.savez(tmp_path / "in.npz", arg0=bf, arg1=np.array(1.5, ml_dtypes.bfloat16))
    with np.load(tmp_path / "in.npz") as z:
        assert z["arg0"].dtype.kind == "V"
    got = read_inputs(tmp_path / "in.npz", [shape.array("bf16", [1, 3]), shape.array("bf16", [])])
    assert got[0].dtype == ml_dtypes.bfloat16 and np.array_equal(got[0], bf)
    assert got[1].shape == () and got[1] == 1.5
    np.savez(tmp_path / "wide.npz", arg0=np.zeros((1, 3), "V4"))
    with pytest.raises(HlortError, match="uint16 raw bits"):  # a void of another width is not
        read_inputs(tmp_path / "wide.npz", [shape.array("bf16", [1, 3])])


def test_float8_saved_as_is_cannot_be_read_and_the_error_says_how_to_save_it(tmp_path):
    np.savez(tmp_path / "in.npz", arg0=np.array([0.5], ml_dtypes.float8_e5m2))  # descr '<f1'
    with pytest.raises(HlortError, match=r"x\.view\(np\.uint8\)") as info:
        read_inputs(tmp_path / "in.npz", [shape.array("f8e5m2", [1])])
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
