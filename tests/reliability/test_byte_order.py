"""Arrays in the other byte order are values like any other: converted, never refused.

A big-endian float32 array used to be refused on every backend with a message that contradicted
itself ("must be f32[4] (numpy float32[4]), got float32[4]").
"""

import numpy as np
import pytest

import hlort

PLATFORMS = ["cpu", "interpreter", "tpusim"]


def _negate(dtype: str) -> str:
    return (
        f"HloModule swapped\nENTRY e {{\n  p = {dtype}[4] parameter(0)\n"
        f"  ROOT n = {dtype}[4] negate(p)\n}}"
    )


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(
    "hlo_type,numpy_type",
    [("f32", ">f4"), ("s32", ">i4"), ("f64", ">f8"), ("c64", ">c8"), ("s16", ">i2")],
)
def test_big_endian_inputs_are_converted(platform, hlo_type, numpy_type):
    exe = hlort.compile(_negate(hlo_type), platform)
    values = (
        np.array([1, -2.5, 0, 7], dtype=numpy_type)
        if "f" in numpy_type or "c" in numpy_type
        else np.array([1, -2, 0, 7], dtype=numpy_type)
    )
    got = exe(values)
    assert got.dtype.isnative
    np.testing.assert_array_equal(got, -values.astype(values.dtype.newbyteorder("=")))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_big_endian_arrays_become_buffers(platform):
    values = np.arange(4, dtype=">f4")
    buf = hlort.backend(platform).device_put(values)
    np.testing.assert_array_equal(buf.numpy(), np.arange(4, dtype=np.float32))
    exe = hlort.compile(_negate("f32"), platform)
    np.testing.assert_array_equal(exe(buf).numpy(), -np.arange(4, dtype=np.float32))


def test_a_real_type_mismatch_is_still_refused_by_name():
    exe = hlort.compile(_negate("f32"), "interpreter")
    with pytest.raises(hlort.HlortError) as info:
        exe(np.arange(4, dtype=">f8"))
    assert "float64" in str(info.value) and "float32" in str(info.value)
