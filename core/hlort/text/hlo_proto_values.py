"""The value messages of XLA's HLO protos: shapes, literals, shardings, metadata.

Field numbers and enum values are those of ``xla/xla_data.proto`` (ShapeProto, LayoutProto,
LiteralProto, OpSharding, OpMetadata, PrimitiveType). Every array shape carries a layout, the
shape's own or the default descending one, as XLA's optimized modules do: jaxlib reads the
executable's parameter and output layouts from it. A literal is written row major under a shape
with the default layout (its data order), whatever the instruction's layout.
"""

from __future__ import annotations

import re

import numpy as np

from hlort.errors import Unimplemented
from hlort.ir.sharding import MANUAL, MAXIMAL, REPLICATED, TILED, TUPLE, UNKNOWN, HloSharding
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort.text.protobuf_wire import Message

# xla.PrimitiveType, by hlort element-type name (s4/u4 and the rest as hlort gains them).
PRIMITIVE_TYPES: dict[str, int] = {
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
    "c64": 15,
    "bf16": 16,
    "c128": 18,
    "f8e5m2": 19,
    "f8e4m3fn": 20,
    "s4": 21,
    "u4": 22,
    "s2": 26,
    "u2": 27,
    "f8e4m3": 28,
    "f8e3m4": 29,
    "f8e4m3b11fnuz": 23,
    "f8e5m2fnuz": 24,
    "f8e4m3fnuz": 25,
    "f4e2m1fn": 32,
    "f8e8m0fnu": 33,
}
TUPLE_TYPE, TOKEN_TYPE = 13, 17

# LiteralProto's field per element type: (field, encoding). "bytes" fields hold the elements'
# little-endian bytes, one after the other; "varints" and "fixed*" fields are packed lists.
_LITERAL_FIELDS: dict[str, tuple[int, str]] = {
    "pred": (2, "varints"),
    "s8": (15, "bytes"),
    "u8": (3, "bytes"),
    "s16": (17, "bytes"),
    "u16": (16, "bytes"),
    "s32": (4, "varints"),
    "s64": (5, "varints"),
    "u32": (6, "varints"),
    "u64": (7, "varints"),
    "f32": (8, "fixed"),
    "f64": (9, "fixed"),
    "c64": (12, "fixed"),
    "c128": (18, "fixed"),
    "f16": (11, "bytes"),
    "bf16": (13, "bytes"),
    "f8e5m2": (19, "bytes"),
    "f8e4m3fn": (20, "bytes"),
    "s4": (21, "bytes"),
    "u4": (22, "bytes"),
}

# OpSharding.Type
_SHARDING_TYPES = {REPLICATED: 0, MAXIMAL: 1, TUPLE: 2, TILED: 3, MANUAL: 4, UNKNOWN: 5}
_SUBGROUP_TYPES = {"replicated": 0, "manual": 4}


def primitive_type(dtype) -> int:
    number = PRIMITIVE_TYPES.get(dtype.name)
    if number is None:
        raise Unimplemented(
            f"element type {dtype.name} has no xla.PrimitiveType hlort knows; add it to "
            "hlort.text.hlo_proto_values.PRIMITIVE_TYPES"
        )
    return number


def default_layout(rank: int) -> tuple[int, ...]:
    """Minor to major of the row-major layout: ``{rank-1, ..., 0}``."""
    return tuple(range(rank - 1, -1, -1))


def shape_message(shape: Shape, with_layout: bool = True) -> Message:
    """``xla.ShapeProto``: arrays with dims, dynamic flags and a layout; tuples; tokens."""
    m = Message()
    if isinstance(shape, TupleShape):
        m.int(2, TUPLE_TYPE)
        m.messages(4, [shape_message(e, with_layout) for e in shape.elements])
        return m
    if not isinstance(shape, ArrayShape):
        if shape.is_token:
            return m.int(2, TOKEN_TYPE)
        raise Unimplemented(f"shape {shape} has no xla.ShapeProto form in hlort")
    m.int(2, primitive_type(shape.dtype))
    m.ints(3, shape.dims)
    if with_layout:
        layout = shape.layout if shape.layout is not None else default_layout(shape.rank)
        m.message(5, Message().ints(1, layout), keep=True)
    if shape.dynamic is not None:
        m.ints(6, [int(d) for d in shape.dynamic])
    return m


def program_shape_message(parameters, result: Shape, names=()) -> Message:
    """``xla.ProgramShapeProto`` (with layouts)."""
    m = Message()
    m.messages(1, [shape_message(s) for s in parameters])
    m.message(2, shape_message(result), keep=True)
    m.strings(3, names)
    return m


def literal_message(value, shape: Shape) -> Message:
    """``xla.LiteralProto`` of a constant's value (a NumPy array, or a tuple of them)."""
    m = Message()
    if isinstance(shape, TupleShape):
        m.message(1, shape_message(shape), keep=True)
        values = tuple(value)
        m.messages(10, [literal_message(v, s) for v, s in zip(values, shape.elements, strict=True)])
        return m
    if not isinstance(shape, ArrayShape):
        raise Unimplemented(f"a constant of shape {shape} has no xla.LiteralProto form in hlort")
    m.message(1, shape_message(ArrayShape(shape.dtype, shape.dims)), keep=True)
    entry = _LITERAL_FIELDS.get(shape.dtype.name)
    if entry is None:
        raise Unimplemented(
            f"constants of element type {shape.dtype.name} have no xla.LiteralProto field in "
            "hlort (hlort.text.hlo_proto_values._LITERAL_FIELDS)"
        )
    field, encoding = entry
    array = np.ascontiguousarray(np.asarray(value, dtype=shape.dtype.numpy).reshape(shape.dims))
    flat = array.reshape(-1)
    if encoding == "varints":
        m.ints(field, flat.astype(np.uint64) if shape.dtype.name in ("u64",) else flat)
    elif encoding == "fixed":
        parts = flat.view(np.float32 if shape.dtype.name in ("f32", "c64") else np.float64)
        m.bytes(field, parts.astype(parts.dtype.newbyteorder("<"), copy=False).tobytes())
    else:
        width = flat.dtype.itemsize
        raw = flat.view(np.dtype(f"<u{width}")) if width > 1 else flat.view(np.uint8)
        m.bytes(field, raw.astype(raw.dtype.newbyteorder("<"), copy=False).tobytes())
    return m


def sharding_message(sharding: HloSharding) -> Message:
    """``xla.OpSharding`` of an :class:`HloSharding` (iota tile assignments stay compact)."""
    kind = sharding.kind
    m = Message().int(1, _SHARDING_TYPES[kind])
    if kind == TUPLE:
        m.messages(5, [sharding_message(e) for e in sharding.elements])
    elif kind == MAXIMAL:
        m.ints(3, [1]).ints(4, [sharding.device])
    elif kind == TILED:
        m.ints(3, sharding.tile_shape)
        if sharding.iota is not None:
            reshape, perm = sharding.iota
            m.ints(9, reshape).ints(10, perm)
        else:
            m.ints(4, sharding.devices)
        if sharding.replicate_on_last_tile_dim:
            m.int(6, True)
        elif sharding.last_tile_dims:
            m.ints(8, [_SUBGROUP_TYPES[k] for k in sharding.last_tile_dims])
    return m


_METADATA_ITEM = re.compile(r'(\w+)\s*=\s*("(?:[^"\\]|\\.)*"|-?\d+)')
_METADATA_FIELDS = {
    "op_type": (1, str),
    "op_name": (2, str),
    "source_file": (3, str),
    "source_line": (4, int),
    "source_end_line": (17, int),
    "source_column": (18, int),
    "source_end_column": (19, int),
    "stack_frame_id": (15, int),
}


def metadata_message(text: str) -> Message:
    """``xla.OpMetadata`` from HLO text's ``metadata={op_name="..." source_line=3}``; keys
    XLA's proto has no field for are left out (they do not change the program)."""
    from hlort.text.lexer import unescape

    m = Message()
    for name, raw in _METADATA_ITEM.findall(text):
        entry = _METADATA_FIELDS.get(name)
        if entry is None:
            continue
        field, kind = entry
        if kind is int:
            m.int(field, int(raw))
        elif raw.startswith('"'):
            m.string(field, unescape(raw[1:-1]))
    return m


def frontend_attributes_message(text: str) -> Message:
    """``xla.FrontendAttributes`` (a string map) from ``frontend_attributes={k="v",...}``."""
    from hlort.text.lexer import unescape

    m = Message()
    for name, raw in re.findall(r'([\w.]+)\s*=\s*("(?:[^"\\]|\\.)*")', text):
        entry = Message().string(1, name).string(2, unescape(raw[1:-1]))
        m.message(1, entry, keep=True)
    return m
