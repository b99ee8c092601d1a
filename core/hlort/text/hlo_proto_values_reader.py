"""Reading the value messages of XLA's HLO protos: shapes, literals, shardings, metadata.

The inverse of :mod:`hlort.text.hlo_proto_values` (same field numbers): what XLA writes in a
binary dump (``*.hlo.pb``) or a jaxlib ``as_serialized_hlo_module_proto()`` becomes hlort's
shapes, NumPy literals, :class:`HloSharding` and the text hlort keeps for metadata. An element
type or sharding kind hlort has no form for is UNIMPLEMENTED naming it.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir.sharding import HloSharding
from hlort.shape import TOKEN, ArrayShape, Shape, TupleShape
from hlort.text import hlo_proto_values as V
from hlort.text.lexer import escape
from hlort.text.protobuf_wire import (
    FIXED32,
    LENGTH,
    VARINT,
    fields,
    signed,
    unpack_varints,
    varints_array,
)

_DTYPE_OF = {number: name for name, number in V.PRIMITIVE_TYPES.items()}
_SUBGROUP_KINDS = {0: "replicated", 4: "manual"}


class Msg:
    """One decoded message: fields by number, with typed getters (proto3 defaults)."""

    __slots__ = ("items",)

    def __init__(self, data: bytes):
        self.items = fields(data)

    def int(self, number: int, default: int = 0) -> int:
        for n, wire, value in self.items:
            if n == number and wire == VARINT:
                default = signed(value)  # the last occurrence wins, as in protobuf
        return default

    def bool(self, number: int) -> bool:
        return bool(self.int(number))

    def bytes(self, number: int) -> bytes:
        out = b""
        for n, wire, value in self.items:
            if n == number and wire == LENGTH:
                out = value
        return out

    def str(self, number: int) -> str:
        return self.bytes(number).decode("utf-8")

    def has(self, number: int) -> bool:
        return any(n == number for n, _, _ in self.items)

    def msg(self, number: int) -> Msg | None:
        data = [v for n, w, v in self.items if n == number and w == LENGTH]
        return Msg(data[-1]) if data else None

    def msgs(self, number: int) -> list[Msg]:
        return [Msg(v) for n, w, v in self.items if n == number and w == LENGTH]

    def ints(self, number: int) -> list[int]:
        return unpack_varints(self.items, number)

    def strs(self, number: int) -> list[str]:
        return [v.decode("utf-8") for n, w, v in self.items if n == number and w == LENGTH]

    def float32(self, number: int) -> float:
        out = 0.0
        for n, wire, value in self.items:
            if n == number and wire == FIXED32:
                out = float(np.frombuffer(value, "<f4")[0])
        return out


def dtype_of(number: int):
    name = _DTYPE_OF.get(number)
    if name is None or not dtypes.is_hlo_name(name):
        raise Unimplemented(
            f"xla.PrimitiveType {number} ({name or 'unknown'}) has no hlort element type"
        )
    return dtypes.from_hlo_name(name)


def shape_from(m: Msg) -> Shape:
    kind = m.int(2)
    if kind == V.TUPLE_TYPE:
        return TupleShape(tuple(shape_from(e) for e in m.msgs(4)))
    if kind == V.TOKEN_TYPE:
        return TOKEN
    dims = tuple(m.ints(3))
    layout_msg = m.msg(5)
    layout = tuple(layout_msg.ints(1)) if layout_msg is not None else ()
    dynamic = [bool(v) for v in m.ints(6)] or None
    return ArrayShape(
        dtype_of(kind), dims, layout if len(layout) == len(dims) and dims else None, dynamic
    )


def literal_from(m: Msg, shape: Shape):
    """A constant's value: a NumPy array of ``shape`` (a tuple of them for a tuple shape)."""
    if isinstance(shape, TupleShape):
        parts = m.msgs(10)
        return tuple(literal_from(p, s) for p, s in zip(parts, shape.elements, strict=True))
    if not isinstance(shape, ArrayShape):
        raise Unimplemented(f"a constant of shape {shape} has no hlort value")
    entry = V._LITERAL_FIELDS.get(shape.dtype.name)
    if entry is None:
        raise Unimplemented(f"constants of element type {shape.dtype.name} cannot be read")
    field, encoding = entry
    np_dtype = shape.dtype.numpy
    if encoding == "varints":
        flat = varints_array(m.items, field, signed_values=shape.dtype.name != "u64")
        flat = flat.astype(np_dtype)
    elif encoding == "fixed":
        part = "<f4" if shape.dtype.name in ("f32", "c64") else "<f8"
        flat = np.frombuffer(m.bytes(field), part).view(np_dtype)
    else:
        width = np_dtype.itemsize
        raw = np.frombuffer(m.bytes(field), f"<u{width}" if width > 1 else np.uint8)
        flat = raw.view(np_dtype)
    size = int(np.prod(shape.dims, dtype=np.int64))
    if flat.size != size:
        raise InvalidArgument(
            f"a {shape} constant holds {flat.size} element(s) in its proto, expected {size}"
        )
    source = m.msg(1)
    array = flat.reshape(shape.dims) if shape.dims else flat.reshape(())
    if source is not None:  # data are in the order of the literal's own layout
        layout = shape_from(source).layout
        if layout is not None and layout != V.default_layout(len(shape.dims)):
            major_first = tuple(reversed(layout))
            stored = flat.reshape([shape.dims[d] for d in major_first])
            array = np.transpose(stored, np.argsort(major_first))
    return array.copy()  # contiguous, writable, 0-d kept (ascontiguousarray makes it 1-d)


def sharding_from(m: Msg) -> HloSharding:
    kind = m.int(1)
    if kind == 0:
        return HloSharding.replicate()
    if kind == 1:
        devices = m.ints(4)
        return HloSharding.maximal(devices[0] if devices else 0)
    if kind == 2:
        return HloSharding.tuple_of([sharding_from(e) for e in m.msgs(5)])
    if kind == 4:
        return HloSharding.manual()
    if kind == 5:
        return HloSharding.unknown()
    if kind != 3:
        raise Unimplemented(f"OpSharding type {kind} has no hlort form")
    dims = m.ints(3)
    if m.bool(6):
        kinds = ("replicated",)
    else:
        kinds = tuple(_SUBGROUP_KINDS.get(k, f"type {k}") for k in m.ints(8))
        unknown = [k for k in kinds if k.startswith("type ")]
        if unknown:
            raise Unimplemented(f"OpSharding last_tile_dims {unknown} have no hlort form")
    reshape = m.ints(9)
    if reshape:
        perm = m.ints(10) or list(range(len(reshape)))
        return HloSharding.iota_tiled(dims, reshape, perm, kinds)
    return HloSharding.tiled(np.asarray(m.ints(4)).reshape(dims), kinds)


_METADATA = ((1, "op_type", str), (2, "op_name", str), (3, "source_file", str))
_METADATA_INTS = ((4, "source_line"), (17, "source_end_line"), (18, "source_column"))


def metadata_text(m: Msg) -> str | None:
    parts = [f'{name}="{escape(m.str(n))}"' for n, name, _ in _METADATA if m.str(n)]
    parts += [f"{name}={m.int(n)}" for n, name in _METADATA_INTS if m.int(n)]
    return "{" + " ".join(parts) + "}" if parts else None


def frontend_attributes_text(m: Msg) -> str | None:
    entries = [(e.str(1), e.str(2)) for e in m.msgs(1)]
    if not entries:
        return None
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in entries) + "}"
