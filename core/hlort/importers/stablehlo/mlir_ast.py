"""The generic MLIR syntax tree the parser produces and the converters consume.

Pretty and generic forms of an op parse to the same :class:`Operation`: the pretty-form parsers
store attributes under the names the generic form uses (``broadcast_dimensions``,
``comparison_direction``...), so conversion sees one representation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

# -- types ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScalarType:
    """A builtin element type by its MLIR spelling: ``f32``, ``i1``, ``ui8``, ``complex<f32>``."""

    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class QuantType:
    """``!quant.uniform<...>``: kept as text; hlort does not support quantized types."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class TensorType:
    """``tensor<2x?x3xf32>``: ``dims`` uses -1 for ``?``; ``encoding`` is kept unparsed."""

    dims: tuple[int, ...]
    element: ScalarType | QuantType
    encoding: Any = None

    @property
    def is_static(self) -> bool:
        return all(d >= 0 for d in self.dims)

    def __str__(self) -> str:
        dims = "".join(("?" if d < 0 else str(d)) + "x" for d in self.dims)
        return f"tensor<{dims}{self.element}>"


@dataclass(frozen=True)
class TupleType:
    types: tuple[Any, ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.types))}>"


@dataclass(frozen=True)
class TokenType:
    def __str__(self) -> str:
        return "!stablehlo.token"


@dataclass(frozen=True)
class OpaqueType:
    """Any other ``!dialect.type`` or unknown builtin type (kept as text for the error)."""

    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class FunctionType:
    inputs: tuple[Any, ...]
    results: tuple[Any, ...]


MlirType = ScalarType | QuantType | TensorType | TupleType | TokenType | OpaqueType | FunctionType

# -- attributes -------------------------------------------------------------------------------


@dataclass
class DenseAttr:
    """``dense<...> : type``. ``value`` is the decoded array (None when the element type is one
    hlort cannot hold, e.g. ``i4``); ``raw`` keeps the literal's text for messages."""

    type: Any
    value: np.ndarray | None
    raw: str = ""


@dataclass(frozen=True)
class EnumAttr:
    """``#stablehlo<comparison_direction LT>``: ``kind`` = comparison_direction, ``value`` = LT."""

    dialect: str
    kind: str
    value: str


@dataclass
class StructAttr:
    """``#stablehlo.gather<offset_dims = [0], ...>``: the fields as parsed attribute values."""

    name: str
    fields: dict[str, Any]


@dataclass(frozen=True)
class ConvDimsAttr:
    """``#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`` as three label lists."""

    input: tuple[str, ...]
    kernel: tuple[str, ...]
    output: tuple[str, ...]


@dataclass(frozen=True)
class SymbolRef:
    name: str


@dataclass(frozen=True)
class TypeAttr:
    type: Any


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
