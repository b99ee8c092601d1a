"""Shapes: arrays (element type, dims, optional layout), tuples and tokens.

Shapes are immutable values: equal shapes compare and hash equal. The layout is kept for round-trips
of HLO text (``f32[2,3]{1,0}``); hlort itself computes in row-major order, and equality of shapes
ignores layout (use :func:`same_with_layout` where it matters).
"""

from __future__ import annotations

import math
from dataclasses import field

import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.errors import InvalidArgument
from hlort.lazy_dataclass import dataclass


class Shape:
    """Base of all shapes."""

    is_array = False
    is_tuple = False
    is_token = False

    def to_hlo(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def __str__(self) -> str:
        return self.to_hlo()

    def leaf_shapes(self) -> list[ArrayShape | TokenShape]:
        """Non-tuple shapes in order (a tuple flattened depth-first)."""
        return [self]  # type: ignore[list-item]


@dataclass(frozen=True, eq=False)
class ArrayShape(Shape):
    dtype: DType
    dims: tuple[int, ...]
    layout: tuple[int, ...] | None = field(default=None, compare=False)
    # XLA's bounded dynamism (``f32[<=8,4]``): True where ``dims`` is a bound, not a size. The
    # value is held padded to the bound; ``get-dimension-size`` gives its size (None: static).
    dynamic: tuple[bool, ...] | None = field(default=None, compare=False)

    is_array = True

    def __post_init__(self):
        dims = tuple(int(d) for d in self.dims)
        object.__setattr__(self, "dims", dims)
        if any(d < 0 for d in dims):
            raise InvalidArgument(f"negative dimension in shape {self.dtype}{list(dims)}")
        if self.layout is not None:
            layout = tuple(int(d) for d in self.layout)
            if sorted(layout) != list(range(len(dims))):
                raise InvalidArgument(
                    f"layout {{{','.join(map(str, layout))}}} is not a permutation of the "
                    f"{len(dims)} dimensions of {self.dtype}{list(dims)}"
                )
            object.__setattr__(self, "layout", layout)
        if self.dynamic is not None:
            dynamic = tuple(bool(d) for d in self.dynamic)
            if len(dynamic) != len(dims):
                raise InvalidArgument(f"dynamic-dimension flags {dynamic} for {len(dims)} dims")
            object.__setattr__(self, "dynamic", dynamic if any(dynamic) else None)

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, ArrayShape) and self.dtype == other.dtype and self.dims == other.dims
        )

    def __hash__(self) -> int:
        return hash((self.dtype.name, self.dims))

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        return math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def with_dtype(self, dtype: DType) -> ArrayShape:
        return ArrayShape(dtype, self.dims)

    def with_dims(self, dims) -> ArrayShape:
        return ArrayShape(self.dtype, tuple(dims))

    def to_hlo(self, with_layout: bool = True) -> str:
        flags = self.dynamic or (False,) * len(self.dims)
        dims = ",".join(
            f"<={d}" if bounded else str(d) for d, bounded in zip(self.dims, flags, strict=True)
        )
        text = f"{self.dtype.name}[{dims}]"
        if with_layout and self.layout is not None:
            text += "{" + ",".join(map(str, self.layout)) + "}"
        return text

    def __repr__(self) -> str:
        return f"ArrayShape({self.to_hlo()})"

    def numpy_dtype(self) -> np.dtype:
        return self.dtype.numpy


@dataclass(frozen=True)
class TupleShape(Shape):
    elements: tuple[Shape, ...]

    is_tuple = True

    def __post_init__(self):
        object.__setattr__(self, "elements", tuple(self.elements))

    def to_hlo(self, with_layout: bool = True) -> str:
        inner = ", ".join(
            e.to_hlo(with_layout) if not e.is_token else e.to_hlo() for e in self.elements
        )
        return f"({inner})"

    def leaf_shapes(self):
        out = []
        for e in self.elements:
            out.extend(e.leaf_shapes())
        return out

    def __repr__(self) -> str:
        return f"TupleShape({self.to_hlo()})"

    @property
    def nbytes(self) -> int:
        return sum(getattr(e, "nbytes", 0) for e in self.elements)


@dataclass(frozen=True)
class TokenShape(Shape):
    is_token = True

    def to_hlo(self, with_layout: bool = True) -> str:
        return "token[]"

    def __repr__(self) -> str:
        return "TokenShape()"

    nbytes = 0


TOKEN = TokenShape()


def array(dtype: DType | str, dims=(), layout=None) -> ArrayShape:
    """Convenience constructor: ``array("f32", [2, 3])`` or ``array(F32, (2, 3))``."""
    if isinstance(dtype, str):
        dtype = dtypes.from_hlo_name(dtype)
    return ArrayShape(dtype, tuple(dims), layout)


def scalar(dtype: DType | str) -> ArrayShape:
    return array(dtype, ())


def tuple_of(*elements: Shape) -> TupleShape:
    return TupleShape(tuple(elements))


def of_value(value) -> Shape:
    """The shape of an interpreter value: ndarray -> ArrayShape, tuple -> TupleShape."""
    if isinstance(value, tuple):
        return TupleShape(tuple(of_value(v) for v in value))
    if value is None or isinstance(value, Token):
        return TOKEN
    arr = np.asarray(value)
    return ArrayShape(dtypes.from_numpy(arr.dtype), arr.shape)


def major_to_minor(shape: ArrayShape) -> tuple[int, ...]:
    """Dimensions from most to least significant in memory (no layout: row-major)."""
    if shape.layout is None:
        return tuple(range(shape.rank))
    return tuple(reversed(shape.layout))


def squeeze_dims(dims: tuple[int, ...]) -> tuple[int, ...]:
    """``dims`` without its size-1 entries: shapes equal up to them hold their elements in the
    same row-major order (a reshape between them is a relabelling)."""
    return tuple(d for d in dims if d != 1)


def same_with_layout(a: Shape, b: Shape) -> bool:
    if isinstance(a, ArrayShape) and isinstance(b, ArrayShape):
        return a == b and a.layout == b.layout
    if isinstance(a, TupleShape) and isinstance(b, TupleShape):
        return len(a.elements) == len(b.elements) and all(
            same_with_layout(x, y) for x, y in zip(a.elements, b.elements, strict=True)
        )
    return a == b


class Token:
    """The runtime value of a token-shaped instruction (ordering only, no data)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "Token()"
