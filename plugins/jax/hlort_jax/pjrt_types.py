"""PJRT_Buffer_Type codes <-> hlort element types (PJRT's enum order, API 0.94)."""

from __future__ import annotations

from hlort import dtypes
from hlort.errors import ErrorCode, HlortError

_CODES_BY_NAME = {
    "pred": 1,
    "s8": 2,
    "s16": 3,
    "s32": 4,
    "s64": 5,
    "u8": 6,
    "u16": 7,
    "u32": 8,
    "u64": 9,
    "f16": 10,
    "f32": 11,
    "f64": 12,
    "bf16": 13,
    "c64": 14,
    "c128": 15,
    "f8e5m2": 16,
    "f8e4m3fn": 17,
    "f8e4m3b11fnuz": 18,
    "f8e5m2fnuz": 19,
    "f8e4m3fnuz": 20,
    "s4": 21,
    "u4": 22,
    "token": 23,
    "s2": 24,
    "u2": 25,
    "f8e4m3": 26,
    "f8e3m4": 27,
    "f8e8m0fnu": 28,
    "f4e2m1fn": 29,
    "s1": 30,
    "u1": 31,
}
_NAMES_BY_CODE = {code: name for name, code in _CODES_BY_NAME.items()}


def code_of(dtype: dtypes.DType) -> int:
    return _CODES_BY_NAME[dtype.name]


def dtype_of(code: int) -> dtypes.DType:
    name = _NAMES_BY_CODE.get(code)
    if name is None:
        raise HlortError(f"unknown PJRT_Buffer_Type {code}", ErrorCode.INVALID_ARGUMENT)
    if not dtypes.is_hlo_name(name):
        raise HlortError(
            f"element type {name} (PJRT_Buffer_Type {code}) is not supported by hlort; "
            f"supported: {', '.join(d.name for d in dtypes.ALL_DTYPES)}",
            ErrorCode.UNIMPLEMENTED,
        )
    return dtypes.from_hlo_name(name)
