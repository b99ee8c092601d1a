"""Element types: names in both dialects, NumPy mapping, classification."""

import ml_dtypes
import numpy as np
import pytest

from hlort import dtypes
from hlort.errors import ErrorCode, HlortError


def test_every_type_has_three_names():
    assert len(dtypes.ALL_DTYPES) == 19
    for d in dtypes.ALL_DTYPES:
        assert dtypes.from_hlo_name(d.name) is d
        assert dtypes.from_stablehlo_name(d.stablehlo_name) is d
        assert dtypes.from_numpy(d.numpy) is d


@pytest.mark.parametrize(
    "hlo,stablehlo,np_type",
    [
        ("pred", "i1", np.bool_),
        ("s8", "i8", np.int8),
        ("u64", "ui64", np.uint64),
        ("bf16", "bf16", ml_dtypes.bfloat16),
        ("f8e4m3fn", "f8E4M3FN", ml_dtypes.float8_e4m3fn),
        ("f8e5m2", "f8E5M2", ml_dtypes.float8_e5m2),
        ("c64", "complex<f32>", np.complex64),
        ("c128", "complex<f64>", np.complex128),
        ("s4", "i4", ml_dtypes.int4),
        ("u4", "ui4", ml_dtypes.uint4),
    ],
)
def test_spellings(hlo, stablehlo, np_type):
    d = dtypes.from_hlo_name(hlo)
    assert d.stablehlo_name == stablehlo
    assert d.numpy == np.dtype(np_type)


def test_classification_and_bits():
    assert dtypes.PRED.bits == 1 and dtypes.PRED.is_pred
    assert dtypes.S32.is_signed_integer and dtypes.S32.bits == 32
    assert dtypes.U16.is_unsigned_integer and not dtypes.U16.is_signed_integer
    assert dtypes.BF16.is_float and dtypes.BF16.itemsize == 2
    assert dtypes.C64.is_complex and dtypes.C64.component is dtypes.F32
    assert dtypes.C128.component is dtypes.F64
    assert dtypes.F32.component is dtypes.F32
    assert dtypes.S4.is_signed_integer and dtypes.S4.bits == 4 and dtypes.S4.itemsize == 1
    assert dtypes.U4.is_unsigned_integer and dtypes.U4.is_sub_byte_integer
    assert not dtypes.S8.is_sub_byte_integer
    assert (dtypes.iinfo(dtypes.S4).min, dtypes.iinfo(dtypes.S4).max) == (-8, 7)
    assert (dtypes.iinfo(dtypes.U4).min, dtypes.iinfo(dtypes.U4).max) == (0, 15)
    assert set(dtypes.INTEGER_DTYPES) == {
        dtypes.S4,
        dtypes.U4,
        dtypes.S8,
        dtypes.S16,
        dtypes.S32,
        dtypes.S64,
        dtypes.U8,
        dtypes.U16,
        dtypes.U32,
        dtypes.U64,
    }


def test_unknown_names_are_invalid_argument():
    for fn, bad in [
        (dtypes.from_hlo_name, "f33"),
        (dtypes.from_stablehlo_name, "si7"),
        (dtypes.from_numpy, np.dtype("U3")),
    ]:
        with pytest.raises(HlortError) as err:
            fn(bad)
        assert err.value.code is ErrorCode.INVALID_ARGUMENT
        assert "f33" in str(err.value) or "si7" in str(err.value) or "U3" in str(err.value)


def test_pickling_gives_back_the_constant():
    """Code compares dtypes by identity; a module read back from a cache must keep that."""
    import pickle

    for dt in dtypes.ALL_DTYPES:
        assert pickle.loads(pickle.dumps(dt)) is dt
