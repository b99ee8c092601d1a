"""Element types.

One :class:`DType` object per element type, each knowing its NumPy dtype, its XLA HLO name and its
StableHLO name. bfloat16 and the float8 types come from ml_dtypes, which NumPy treats as real
dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

from hlort.errors import InvalidArgument


@dataclass(frozen=True)
class DType:
    """An element type. Compare by identity or name; use the module-level constants."""

    name: str  # XLA HLO spelling: "f32", "pred", "bf16", "f8e4m3fn"
    stablehlo_name: str  # "f32", "i1", "ui8", "f8E4M3FN", "complex<f32>"
    numpy: np.dtype
    kind: str  # "pred", "sint", "uint", "float", "complex"

    def __reduce__(self):
        """Unpickle to the module-level constant: code compares dtypes by identity."""
        return (from_hlo_name, (self.name,))

    @property
    def bits(self) -> int:
        return 1 if self.kind == "pred" else self.numpy.itemsize * 8

    @property
    def itemsize(self) -> int:
        return self.numpy.itemsize

    @property
    def is_pred(self) -> bool:
        return self.kind == "pred"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("sint", "uint")

    @property
    def is_signed_integer(self) -> bool:
        return self.kind == "sint"

    @property
    def is_unsigned_integer(self) -> bool:
        return self.kind == "uint"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_complex(self) -> bool:
        return self.kind == "complex"

    @property
    def is_floating_or_complex(self) -> bool:
        return self.kind in ("float", "complex")

    @property
    def component(self) -> DType:
        """The real component type of a complex type; the type itself otherwise."""
        return {"c64": F32, "c128": F64}.get(self.name, self)

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


PRED = DType("pred", "i1", np.dtype(np.bool_), "pred")
S8 = DType("s8", "i8", np.dtype(np.int8), "sint")
S16 = DType("s16", "i16", np.dtype(np.int16), "sint")
S32 = DType("s32", "i32", np.dtype(np.int32), "sint")
S64 = DType("s64", "i64", np.dtype(np.int64), "sint")
U8 = DType("u8", "ui8", np.dtype(np.uint8), "uint")
U16 = DType("u16", "ui16", np.dtype(np.uint16), "uint")
U32 = DType("u32", "ui32", np.dtype(np.uint32), "uint")
U64 = DType("u64", "ui64", np.dtype(np.uint64), "uint")
F16 = DType("f16", "f16", np.dtype(np.float16), "float")
BF16 = DType("bf16", "bf16", np.dtype(ml_dtypes.bfloat16), "float")
F32 = DType("f32", "f32", np.dtype(np.float32), "float")
F64 = DType("f64", "f64", np.dtype(np.float64), "float")
C64 = DType("c64", "complex<f32>", np.dtype(np.complex64), "complex")
C128 = DType("c128", "complex<f64>", np.dtype(np.complex128), "complex")
F8E4M3FN = DType("f8e4m3fn", "f8E4M3FN", np.dtype(ml_dtypes.float8_e4m3fn), "float")
F8E5M2 = DType("f8e5m2", "f8E5M2", np.dtype(ml_dtypes.float8_e5m2), "float")

ALL_DTYPES: tuple[DType, ...] = (
    PRED,
    S8,
    S16,
    S32,
    S64,
    U8,
    U16,
    U32,
    U64,
    F16,
    BF16,
    F32,
    F64,
    C64,
    C128,
    F8E4M3FN,
    F8E5M2,
)
SIGNED_INTEGER_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "sint")
UNSIGNED_INTEGER_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "uint")
INTEGER_DTYPES = SIGNED_INTEGER_DTYPES + UNSIGNED_INTEGER_DTYPES
FLOAT_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "float")
COMPLEX_DTYPES = (C64, C128)

_BY_HLO_NAME = {d.name: d for d in ALL_DTYPES}
_BY_STABLEHLO_NAME = {d.stablehlo_name: d for d in ALL_DTYPES}
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES}


def from_hlo_name(name: str) -> DType:
    """``"f32"`` -> F32. Raises INVALID_ARGUMENT naming the known types."""
    try:
        return _BY_HLO_NAME[name]
    except KeyError:
        raise InvalidArgument(
            f"unknown element type {name!r}; known: {', '.join(_BY_HLO_NAME)}"
        ) from None


def from_stablehlo_name(name: str) -> DType:
    """``"i1"`` -> PRED, ``"complex<f32>"`` -> C64."""
    try:
        return _BY_STABLEHLO_NAME[name.replace(" ", "")]
    except KeyError:
        raise InvalidArgument(
            f"unknown StableHLO element type {name!r}; known: {', '.join(_BY_STABLEHLO_NAME)}"
        ) from None


def from_numpy(dtype) -> DType:
    """np.float32 / np.dtype('float32') / 'float32' -> F32."""
    try:
        return _BY_NUMPY[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise InvalidArgument(f"NumPy dtype {dtype!r} has no hlort element type") from None


def is_hlo_name(name: str) -> bool:
    return name in _BY_HLO_NAME
