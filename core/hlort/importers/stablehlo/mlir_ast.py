"""The generic MLIR syntax tree the parser produces and the converters consume.

Pretty and generic forms of an op parse to the same :class:`Operation`: the pretty-form parsers
store attributes under the names the generic form uses (``broadcast_dimensions``,
``comparison_direction``...), so conversion sees one representation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from operator import attrgetter
from typing import Any

import numpy as np

from hlort.lazy_dataclass import dataclass

_set = object.__setattr__  # how a frozen value's __init__ assigns its fields


class _Value:
    """An immutable syntax value: equality, hash and repr over its ``__slots__``, as a frozen
    dataclass has them. Written once here, not generated: making a frozen dataclass compiles
    Python source for six methods (~0.6 ms a class), which every process's first StableHLO
    import paid for each of these classes."""

    __slots__ = ()
    _key: Callable[[Any], Any] = staticmethod(lambda value: ())  # the fields, to compare

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__slots__:
            cls._key = staticmethod(attrgetter(*cls.__slots__))

    def _fields(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key(self) == self._key(other)

    def __hash__(self) -> int:
        return hash(self._key(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __reduce__(self):  # pickle and copy rebuild through __init__ (__setattr__ refuses)
        return type(self), self._fields()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is frozen")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is frozen")


# -- types ------------------------------------------------------------------------------------


class ScalarType(_Value):
    """A builtin element type by its MLIR spelling: ``f32``, ``i1``, ``ui8``, ``complex<f32>``."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        _set(self, "name", name)

    def __str__(self) -> str:
        return self.name


class QuantType(_Value):
    """``!quant.uniform<...>``: kept as text; hlort does not support quantized types."""

    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        _set(self, "text", text)

    def __str__(self) -> str:
        return self.text


class TensorType(_Value):
    """``tensor<2x?x3xf32>``: ``dims`` uses -1 for ``?``; ``encoding`` is kept unparsed."""

    __slots__ = ("dims", "element", "encoding")
    dims: tuple[int, ...]
    element: ScalarType | QuantType
    encoding: Any

    def __init__(
        self, dims: tuple[int, ...], element: ScalarType | QuantType, encoding: Any = None
    ) -> None:
        _set(self, "dims", dims)
        _set(self, "element", element)
        _set(self, "encoding", encoding)

    @property
    def is_static(self) -> bool:
        return all(d >= 0 for d in self.dims)

    def __str__(self) -> str:
        dims = "".join(("?" if d < 0 else str(d)) + "x" for d in self.dims)
        return f"tensor<{dims}{self.element}>"


class TupleType(_Value):
    __slots__ = ("types",)
    types: tuple[Any, ...]

    def __init__(self, types: tuple[Any, ...]) -> None:
        _set(self, "types", types)

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.types))}>"


class TokenType(_Value):
    __slots__ = ()

    def __str__(self) -> str:
        return "!stablehlo.token"


class OpaqueType(_Value):
    """Any other ``!dialect.type`` or unknown builtin type (kept as text for the error)."""

    __slots__ = ("text",)
    text: str

    def __init__(self, text: str) -> None:
        _set(self, "text", text)

    def __str__(self) -> str:
        return self.text


class FunctionType(_Value):
    __slots__ = ("inputs", "results")
    inputs: tuple[Any, ...]
    results: tuple[Any, ...]

    def __init__(self, inputs: tuple[Any, ...], results: tuple[Any, ...]) -> None:
        _set(self, "inputs", inputs)
        _set(self, "results", results)


MlirType = ScalarType | QuantType | TensorType | TupleType | TokenType | OpaqueType | FunctionType

# -- attributes -------------------------------------------------------------------------------


class TypedInt(int):
    """An integer attribute with its type (``76 : ui8``): an ``int`` everywhere, and
    ``mlir_type`` for whoever must spell it again (a typed-FFI call's attributes)."""

    mlir_type: str

    def __new__(cls, value: int, mlir_type: str = "") -> TypedInt:
        self = super().__new__(cls, value)
        self.mlir_type = mlir_type
        return self

    def __reduce__(self):  # copies and pickles keep the type
        return (TypedInt, (int(self), self.mlir_type))


@dataclass
class DenseAttr:
    """``dense<...> : type``. ``value`` is the decoded array (None when the element type is one
    hlort cannot hold, e.g. ``i4``); ``raw`` keeps the literal's text for messages."""

    type: Any
    value: np.ndarray | None
    raw: str = ""


class EnumAttr(_Value):
    """``#stablehlo<comparison_direction LT>``: ``kind`` = comparison_direction, ``value`` = LT."""

    __slots__ = ("dialect", "kind", "value")
    dialect: str
    kind: str
    value: str

    def __init__(self, dialect: str, kind: str, value: str) -> None:
        _set(self, "dialect", dialect)
        _set(self, "kind", kind)
        _set(self, "value", value)


@dataclass
class StructAttr:
    """``#stablehlo.gather<offset_dims = [0], ...>``: the fields as parsed attribute values."""

    name: str
    fields: dict[str, Any]


class ConvDimsAttr(_Value):
    """``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`` as three label lists."""

    __slots__ = ("input", "kernel", "output")
    input: tuple[str, ...]
    kernel: tuple[str, ...]
    output: tuple[str, ...]

    def __init__(
        self, input: tuple[str, ...], kernel: tuple[str, ...], output: tuple[str, ...]
    ) -> None:
        _set(self, "input", input)
        _set(self, "kernel", kernel)
        _set(self, "output", output)


class SymbolRef(_Value):
    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        _set(self, "name", name)


class TypeAttr(_Value):
    __slots__ = ("type",)
    type: Any

    def __init__(self, type: Any) -> None:  # noqa: A002 - the field's name
        _set(self, "type", type)


# -- structure --------------------------------------------------------------------------------


@dataclass
class Block:
    args: list[tuple[str, Any]] = field(default_factory=list)
    ops: list[Operation] = field(default_factory=list)


@dataclass
class Region:
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Operation:
    """One op. ``results`` are the names its values are known by (``%0#1`` for multi-results)."""

    name: str
    results: list[str]
    operands: list[str]
    attrs: dict[str, Any]
    regions: list[Region]
    result_types: list[Any]
    operand_types: list[Any] | None
    line: int
    column: int


@dataclass
class Function:
    name: str
    visibility: str
    args: list[tuple[str, Any]]
    result_types: list[Any]
    body: Region | None
    line: int
    attrs: dict[str, Any] = field(default_factory=dict)
    arg_attrs: list[dict[str, Any]] = field(default_factory=list)  # one dict per argument
    result_attrs: list[dict[str, Any]] = field(default_factory=list)  # one dict per result


@dataclass
class MlirModule:
    name: str | None
    attrs: dict[str, Any]
    functions: dict[str, Function]
    line: int = 1
