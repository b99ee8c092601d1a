"""Element types.

One :class:`DType` object per element type, each knowing its NumPy dtype, its XLA HLO name and its
StableHLO name. bfloat16, the float8 types and the 4-bit integers (s4/u4: ``ml_dtypes.int4`` and
``uint4``) come from ml_dtypes, which NumPy treats as real dtypes. A 4-bit integer is held one
element per byte, its bits in the low nibble and the high nibble zero, as ml_dtypes and XLA's
unpacked literals hold it: ``bits`` is 4, ``itemsize`` 1. ml_dtypes takes most of a second to
import, so it is imported when one of its types' NumPy dtype is first needed (``BF16.numpy``, or
:func:`from_numpy` on a type it does not know yet), not when this table is.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import InvalidArgument

_ML_DTYPES_ITEMSIZE = {
    "bfloat16": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "int4": 1,
    "uint4": 1,
}
_SUB_BYTE_BITS = {"s4": 4, "u4": 4}  # value bits of types narrower than their byte


class DType:
    """An element type. Compare by identity or name; use the module-level constants."""

    __slots__ = ("name", "stablehlo_name", "kind", "_numpy", "_ml_dtypes_name")

    def __init__(self, name: str, stablehlo_name: str, numpy: np.dtype | str, kind: str):
        """``numpy`` is a NumPy dtype, or the name of an ml_dtypes type (``"bfloat16"``),
        looked up on first use."""
        set_ = object.__setattr__
        set_(self, "name", name)  # XLA HLO spelling: "f32", "pred", "bf16", "f8e4m3fn"
        set_(self, "stablehlo_name", stablehlo_name)  # "f32", "i1", "ui8", "f8E4M3FN", ...
        set_(self, "kind", kind)  # "pred", "sint", "uint", "float", "complex"
        set_(self, "_numpy", numpy if isinstance(numpy, np.dtype) else None)
        set_(self, "_ml_dtypes_name", None if isinstance(numpy, np.dtype) else numpy)

    def __setattr__(self, name, value):
        raise AttributeError(f"DType is immutable (cannot set {name})")

    @property
    def numpy(self) -> np.dtype:
        value = self._numpy
        if value is None:
            import ml_dtypes

            value = np.dtype(getattr(ml_dtypes, self._ml_dtypes_name))
            object.__setattr__(self, "_numpy", value)
        return value

    @property
    def from_ml_dtypes(self) -> bool:
        """Whether NumPy gets this type from ml_dtypes (bfloat16, float8, int4, uint4)."""
        return self._ml_dtypes_name is not None

    def __reduce__(self):
        """Unpickle to the module-level constant: code compares dtypes by identity."""
        return (from_hlo_name, (self.name,))

    @property
    def bits(self) -> int:
        """Value bits: 1 for pred, 4 for s4/u4 (one byte each in memory), else 8 x itemsize."""
        if self.kind == "pred":
            return 1
        return _SUB_BYTE_BITS.get(self.name, self.itemsize * 8)

    @property
    def is_sub_byte_integer(self) -> bool:
        """s4/u4: integers whose values are narrower than the byte that holds each one."""
        return self.name in _SUB_BYTE_BITS

    @property
    def itemsize(self) -> int:
        if self._numpy is None:  # sizes need no ml_dtypes import
            return _ML_DTYPES_ITEMSIZE[self._ml_dtypes_name]
        return self._numpy.itemsize

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
BF16 = DType("bf16", "bf16", "bfloat16", "float")
F32 = DType("f32", "f32", np.dtype(np.float32), "float")
F64 = DType("f64", "f64", np.dtype(np.float64), "float")
C64 = DType("c64", "complex<f32>", np.dtype(np.complex64), "complex")
C128 = DType("c128", "complex<f64>", np.dtype(np.complex128), "complex")
F8E4M3FN = DType("f8e4m3fn", "f8E4M3FN", "float8_e4m3fn", "float")
F8E5M2 = DType("f8e5m2", "f8E5M2", "float8_e5m2", "float")
S4 = DType("s4", "i4", "int4", "sint")
U4 = DType("u4", "ui4", "uint4", "uint")

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
    S4,
    U4,
)
SIGNED_INTEGER_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "sint")
UNSIGNED_INTEGER_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "uint")
INTEGER_DTYPES = SIGNED_INTEGER_DTYPES + UNSIGNED_INTEGER_DTYPES
FLOAT_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "float")
COMPLEX_DTYPES = (C64, C128)

_BY_HLO_NAME = {d.name: d for d in ALL_DTYPES}
_BY_STABLEHLO_NAME = {d.stablehlo_name: d for d in ALL_DTYPES}
# the NumPy types; ml_dtypes' join on the first lookup that misses (_by_numpy_with_ml_dtypes)
_BY_NUMPY = {d.numpy: d for d in ALL_DTYPES if not d.from_ml_dtypes}


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


def _by_numpy_with_ml_dtypes() -> dict[np.dtype, DType]:
    if not any(d.numpy in _BY_NUMPY for d in ALL_DTYPES if d.from_ml_dtypes):
        _BY_NUMPY.update({d.numpy: d for d in ALL_DTYPES if d.from_ml_dtypes})
    return _BY_NUMPY


def from_numpy(dtype) -> DType:
    """np.float32 / np.dtype('float32') / 'float32' -> F32."""
    try:
        return _BY_NUMPY[np.dtype(dtype)]
    except (KeyError, TypeError):
        pass
    try:  # bfloat16 / float8, or a name NumPy knows once ml_dtypes is imported
        return _by_numpy_with_ml_dtypes()[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise InvalidArgument(f"NumPy dtype {dtype!r} has no hlort element type") from None


def finfo(dtype: DType):
    """Machine limits of a floating type: ``np.finfo`` for NumPy's own, ``ml_dtypes.finfo`` for
    bfloat16 and float8 (the only callers that import ml_dtypes)."""
    if dtype.from_ml_dtypes:
        import ml_dtypes

        return ml_dtypes.finfo(dtype.numpy)
    return np.finfo(dtype.numpy)


def is_hlo_name(name: str) -> bool:
    return name in _BY_HLO_NAME


def iinfo(dtype: DType):
    """Limits (``.min``, ``.max``, ``.bits``) of an integer type: ``np.iinfo`` for NumPy's own,
    ``ml_dtypes.iinfo`` for s4/u4 (np.iinfo refuses ml_dtypes' integers)."""
    if dtype.from_ml_dtypes:
        import ml_dtypes

        return ml_dtypes.iinfo(dtype.numpy)
    return np.iinfo(dtype.numpy)
