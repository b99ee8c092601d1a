"""MLIR types -> hlort shapes.

Everything hlort cannot represent (quantized element types, element types without an hlort DType
such as ``f8E3M4``) raises UNIMPLEMENTED naming the type, so the caller can report
"unsupported" rather than fail. A ``?`` dimension reaching here is one shape refinement did not
resolve (shape_refinement.py): UNIMPLEMENTED saying how to give the shapes.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.dtypes import DType
from hlort.errors import Unimplemented
from hlort.importers.stablehlo.mlir_ast import (
    OpaqueType,
    QuantType,
    ScalarType,
    TensorType,
    TokenType,
    TupleType,
)
from hlort.shape import TOKEN, ArrayShape, Shape, TupleShape

_ELEMENT: dict[str, DType] = {d.stablehlo_name: d for d in dtypes.ALL_DTYPES}
# 2-bit integers (no hlort DType) are held in the byte type of the same signedness; the importer
# wraps every result back into range (see narrow_integer), so arithmetic behaves as in the narrow
# type. 4-bit integers are hlort's own S4/U4.
NARROW_INTEGERS: dict[str, tuple[DType, int]] = {
    "i2": (dtypes.S8, 2),
    "ui2": (dtypes.U8, 2),
    "si2": (dtypes.S8, 2),
}
_ELEMENT.update(
    {
        "i1": dtypes.PRED,
        "si4": dtypes.S4,
        "si8": dtypes.S8,
        "si16": dtypes.S16,
        "si32": dtypes.S32,
        "si64": dtypes.S64,
    }
)


def element_dtype(element) -> DType | None:
    """The hlort DType of an MLIR element type, or None when hlort has none. A quantized type is
    held as its storage integers (see :mod:`.quantization`)."""
    if isinstance(element, QuantType):
        from hlort.importers.stablehlo.quantization import quant_params

        return quant_params(element).storage
    if isinstance(element, ScalarType):
        if element.name in NARROW_INTEGERS:
            return NARROW_INTEGERS[element.name][0]
        return _ELEMENT.get(element.name)
    return None


def narrow_integer(t) -> int | None:
    """The bit width of a sub-byte integer element type (``tensor<4xi4>`` -> 4), else None."""
    element = t.element if isinstance(t, TensorType) else t
    if isinstance(element, ScalarType) and element.name in NARROW_INTEGERS:
        return NARROW_INTEGERS[element.name][1]
    return None


def require_dtype(element, where: str = "") -> DType:
    dt = element_dtype(element)
    if dt is None:
        if isinstance(element, QuantType):
            raise Unimplemented(f"{where}quantized type {element} is not supported by hlort")
        raise Unimplemented(f"{where}element type {element} is not supported by hlort")
    return dt


def to_shape(t, where: str = "") -> Shape:
    """The hlort shape of an MLIR type; UNIMPLEMENTED for what hlort cannot represent."""
    if isinstance(t, TensorType):
        dt = require_dtype(t.element, where)
        if not t.is_static:
            raise Unimplemented(
                f"{where}dynamic shape {t} (a '?' dimension) needs the argument shapes: compile "
                f"the program with hlort.compile, which refines it for each call's shapes, or "
                f"refine it with hlort.importers.stablehlo.polymorphic.refine_stablehlo"
            )
        return ArrayShape(dt, t.dims)
    if isinstance(t, TupleType):
        return TupleShape(tuple(to_shape(e, where) for e in t.types))
    if isinstance(t, TokenType):
        return TOKEN
    if isinstance(t, ScalarType):
        return ArrayShape(require_dtype(t, where), ())
    if isinstance(t, QuantType):
        return ArrayShape(require_dtype(t, where), ())
    if isinstance(t, OpaqueType):
        raise Unimplemented(f"{where}type {t} is not supported by hlort")
    raise Unimplemented(f"{where}type {t} is not supported by hlort")
