"""hlort's own binary form of modules and plain values: what the caches store instead of pickles.

A pickle runs code when it is loaded, so a cache file that anyone else could write would run their
code in every process. This codec only ever builds the types it is given by name (hlort's shapes,
dtypes, attribute dataclasses and enums, plus what a caller allows), from JSON and raw bytes, so
a damaged or planted file can be rejected but never executed. Loading stays fast (a warm cache
must not pay the HLO text parser): one ``json.loads`` and one constructor call per object.

Frame: ``b"HLORTVAL1"``, u32 length of a UTF-8 JSON document, then the raw bytes of the arrays
(the document names each array's offset and size). Values encode as JSON scalars (None, bool,
int, str) or tagged lists: ``["T", ...]`` tuple, ``["L", ...]`` list, ``["F", hex]`` float
(exact), ``["M", k, v, ...]`` dict, ``["E", class, member]`` enum, ``["D", class, {field: v}]``
dataclass, ``["N", class, ...]`` named tuple, ``["Y", name]`` DType, ``["S", shape]``,
``["A", dtype, dims, offset, size]`` array (``"G"``: a NumPy scalar), ``["C", k]`` the module's
k-th computation. Anything else cannot be encoded (:class:`CodecError`); anything malformed
cannot be decoded (:class:`CodecError` too).
"""

from __future__ import annotations

import dataclasses
import enum
import math
import struct
from typing import Any

import numpy as np

from hlort import dtypes
from hlort.dtypes import DType
from hlort.ir import attributes as A
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.shape import TOKEN, ArrayShape, Shape, TokenShape, TupleShape

MAGIC = b"HLORTVAL1"
_LEN = struct.Struct(">I")
_NUMPY_KINDS = frozenset("biufc")  # builtin NumPy dtypes an array may have besides hlort's


class CodecError(ValueError):
    """A value this codec cannot write, or bytes it will not read."""


def _own_classes() -> dict[str, type]:
    found = {
        name: cls
        for name, cls in vars(A).items()
        if isinstance(cls, type) and cls.__module__ == A.__name__
    }
    found["Opcode"] = Opcode
    return found


_CLASSES = _own_classes()


# -- writing --------------------------------------------------------------------------------
class _Writer:
    def __init__(
        self, classes: dict[str, type], computations: dict[Computation, int] | None = None
    ):
        self.classes = {**_CLASSES, **classes}
        self.computations = computations or {}
        self.blobs: list[bytes] = []
        self.offset = 0
        self.shapes: list[Any] = []  # each distinct instruction shape once (decoded once)
        self._shape_ids: dict[str, int] = {}
        import json  # on first use: a first compile stores while its LLVM runs (jit.AFTER_LLVM)

        self._dumps = json.dumps

    def shape_id(self, shape: Shape) -> int:
        doc = shape_to_json(shape)
        key = self._dumps(doc)
        k = self._shape_ids.get(key)
        if k is None:
            k = self._shape_ids[key] = len(self.shapes)
            self.shapes.append(doc)
        return k

    def value(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, str)) and not isinstance(v, enum.Enum):
            return v
        if isinstance(v, float):
            return ["F", struct.pack("<d", v).hex()]
        if isinstance(v, Computation):
            if v not in self.computations:
                raise CodecError(f"computation {v.name} is not part of the module")
            return ["C", self.computations[v]]
        if isinstance(v, enum.Enum):
            return ["E", self._name(type(v)), v.name]
        if isinstance(v, DType):
            return ["Y", v.name]
        if isinstance(v, Shape):
            return ["S", shape_to_json(v)]
        if isinstance(v, (np.ndarray, np.generic)):
            return self.array(v)
        if isinstance(v, tuple) and hasattr(v, "_fields"):
            return ["N", self._name(type(v)), *(self.value(x) for x in v)]
        if type(v) is tuple:
            return ["T", *(self.value(x) for x in v)]
        if type(v) is list:
            return ["L", *(self.value(x) for x in v)]
        if type(v) is dict:
            out: list[Any] = ["M"]
            for key, item in v.items():
                out += [self.value(key), self.value(item)]
            return out
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: self.value(getattr(v, f.name)) for f in dataclasses.fields(v)}
            return ["D", self._name(type(v)), fields]
        raise CodecError(f"cannot encode a {type(v).__module__}.{type(v).__qualname__}")

    def _name(self, cls: type) -> str:
        name = cls.__name__
        if self.classes.get(name) is not cls:
            raise CodecError(f"class {cls.__module__}.{cls.__qualname__} is not allowed")
        return name

    def array(self, v) -> list:
        a = np.asarray(v)  # not ascontiguousarray: it turns 0-d arrays into 1-d ones
        if not a.flags.c_contiguous:
            a = a.copy(order="C")
        try:
            name = dtypes.from_numpy(a.dtype).name
        except Exception:  # noqa: BLE001 - a NumPy type hlort has no DType for
            if a.dtype.kind not in _NUMPY_KINDS:
                raise CodecError(f"cannot encode an array of {a.dtype}") from None
            name = "=" + a.dtype.str
        data = a.tobytes()
        self.blobs.append(data)
        tag = "G" if isinstance(v, np.generic) else "A"
        out = [tag, name, list(a.shape), self.offset, len(data)]
        self.offset += len(data)
        return out


def shape_to_json(shape: Shape) -> Any:
    if isinstance(shape, ArrayShape):
        layout = list(shape.layout) if shape.layout is not None else None
        return [shape.dtype.name, list(shape.dims), layout]
    if isinstance(shape, TupleShape):
        return ["tuple", [shape_to_json(e) for e in shape.elements]]
    if isinstance(shape, TokenShape):
        return "token"
    raise CodecError(f"cannot encode shape {shape!r}")


def _frame(doc: Any, writer: _Writer) -> bytes:
    import json

    head = json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()
    return b"".join([MAGIC, _LEN.pack(len(head)), head, *writer.blobs])


def encode_value(value: Any, classes: dict[str, type] | None = None) -> bytes:
    """``value`` (built from the allowed types) as bytes; CodecError if it cannot be."""
    writer = _Writer(classes or {})
    return _frame(writer.value(value), writer)


def encode_module(module: Module) -> bytes:
    """The whole module: every computation, instruction, attribute, literal and name."""
    numbers = {c: k for k, c in enumerate(module.computations)}
    writer = _Writer({}, numbers)
    comps = []
    for comp in module.computations:
        order = comp.instructions  # kept as is: backends may number kernels in this order
        position = {instr: k for k, instr in enumerate(order)}
        rows = []
        for instr in order:
            try:
                operands = [position[o] for o in instr.operands]
            except KeyError:
                raise CodecError(
                    f"{instr.name} uses an instruction of another computation"
                ) from None
            rows.append(
                [
                    instr.opcode.value,
                    writer.shape_id(instr.shape),
                    operands,
                    writer.value(instr.attrs),
                    instr.name,
                    writer.value(instr.literal),
                    instr.parameter_number,
                    writer.value(instr.extra_attrs),
                ]
            )
        root = position.get(comp.root) if comp.root is not None else None
        comps.append([comp.name, comp.is_fusion_computation, rows, root])
    entry = numbers.get(module.entry) if module.entry is not None else None
    doc = [
        "module",
        module.name,
        writer.value(module.attributes),
        writer.value(module.config),
        comps,
        entry,
        writer.shapes,
    ]
    return _frame(doc, writer)


# -- reading --------------------------------------------------------------------------------
class _Reader:
    def __init__(self, blobs: memoryview, classes: dict[str, type]):
        self.blobs = blobs
        self.classes = {**_CLASSES, **classes}
        self.computations: list[Computation] = []

    def value(self, v: Any) -> Any:
        if not isinstance(v, list):
            if v is None or isinstance(v, (bool, int, str)):
                return v
            raise CodecError(f"unexpected {type(v).__name__} in the document")
        tag = v[0]
        if tag == "M" and len(v) == 1:  # most attribute dicts are empty
            return {}
        if tag == "T":
            return tuple(self.value(x) for x in v[1:])
        if tag == "L":
            return [self.value(x) for x in v[1:]]
        if tag == "M":
            items = v[1:]
            if len(items) % 2:
                raise CodecError("dict with an odd number of items")
            return {
                self._key(self.value(items[i])): self.value(items[i + 1])
                for i in range(0, len(items), 2)
            }
        if tag == "F":
            return struct.unpack("<d", bytes.fromhex(v[1]))[0]
        if tag == "Y":
            return dtypes.from_hlo_name(v[1])
        if tag == "S":
            return shape_from_json(v[1])
        if tag in ("A", "G"):
            return self.array(v)
        if tag == "C":
            return self.computations[_index(v[1], len(self.computations))]
        if tag == "E":
            cls = self._class(v[1], enum.Enum)
            return cls[v[2]]
        if tag == "N":
            cls = self._class(v[1], tuple)
            return cls(*(self.value(x) for x in v[2:]))
        if tag == "D":
            cls = self._class(v[1], object)
            if not dataclasses.is_dataclass(cls) or not isinstance(v[2], dict):
                raise CodecError(f"{v[1]} is not a dataclass")
            return cls(**{str(k): self.value(x) for k, x in v[2].items()})
        raise CodecError(f"unknown tag {tag!r}")

    @staticmethod
    def _key(key: Any) -> Any:
        if isinstance(key, (list, dict)):
            raise CodecError("unhashable dict key")
        return key

    def _class(self, name: Any, base: type) -> type:
        cls = self.classes.get(name) if isinstance(name, str) else None
        if cls is None or not issubclass(cls, base):
            raise CodecError(f"class {name!r} is not allowed here")
        return cls

    def array(self, v: list) -> Any:
        _, name, dims, offset, size = v
        if not isinstance(name, str):
            raise CodecError("bad array dtype")
        if name.startswith("="):
            dt = np.dtype(name[1:])
            if dt.kind not in _NUMPY_KINDS:
                raise CodecError(f"array dtype {dt} is not allowed")
        else:
            dt = np.dtype(dtypes.from_hlo_name(name).numpy)
        dims = tuple(_index(d, 1 << 62) for d in dims)
        if math.prod(dims) * dt.itemsize != size or not 0 <= offset <= len(self.blobs) - size:
            raise CodecError("array bytes do not match its shape")
        a = np.frombuffer(self.blobs[offset : offset + size], dt).reshape(dims).copy()
        return a[()] if v[0] == "G" else a


def _index(k: Any, bound: int) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < bound:
        raise CodecError(f"index {k!r} out of range")
    return k


def shape_from_json(doc: Any) -> Shape:
    if doc == "token":
        return TOKEN
    if isinstance(doc, list) and len(doc) == 2 and doc[0] == "tuple":
        return TupleShape(tuple(shape_from_json(e) for e in doc[1]))
    if not isinstance(doc, list) or len(doc) != 3:
        raise CodecError("bad shape")
    name, dims, layout = doc
    dims = tuple(_index(d, 1 << 63) for d in dims)
    if layout is not None:
        layout = tuple(_index(d, len(dims)) for d in layout)
        if sorted(layout) != list(range(len(dims))):
            raise CodecError("layout is not a permutation")
    return ArrayShape(dtypes.from_hlo_name(name), dims, layout)


def _unframe(data: bytes) -> tuple[Any, memoryview]:
    view = memoryview(data)
    if len(view) < len(MAGIC) + _LEN.size or bytes(view[: len(MAGIC)]) != MAGIC:
        raise CodecError("not an hlort value frame")
    (length,) = _LEN.unpack_from(view, len(MAGIC))
    start = len(MAGIC) + _LEN.size
    if start + length > len(view):
        raise CodecError("truncated frame")
    try:
        import json

        doc = json.loads(bytes(view[start : start + length]))
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise CodecError(f"malformed document: {err}") from None
    return doc, view[start + length :]


def decode_value(data: bytes, classes: dict[str, type] | None = None) -> Any:
    """Inverse of :func:`encode_value`; CodecError for anything it did not write."""
    doc, blobs = _unframe(data)
    try:
        return _Reader(blobs, classes or {}).value(doc)
    except CodecError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever the bytes, one error
        raise CodecError(f"malformed value: {type(err).__name__}: {err}") from None


def decode_module(data: bytes) -> Module:
    """Inverse of :func:`encode_module`; CodecError for anything it did not write."""
    doc, blobs = _unframe(data)
    try:
        return _read_module(doc, _Reader(blobs, {}))
    except CodecError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever the bytes, one error
        raise CodecError(f"malformed module: {type(err).__name__}: {err}") from None


def _read_module(doc: Any, reader: _Reader) -> Module:
    tag, name, attributes, config, comps, entry, shape_docs = doc
    shapes = [shape_from_json(d) for d in shape_docs]
    if tag != "module" or not isinstance(name, str):
        raise CodecError("not a module")
    module = Module(name)
    module.attributes = reader.value(attributes)
    module.config = reader.value(config)
    reader.computations = [Computation(str(c[0])) for c in comps]
    for comp, (_, fusion, rows, root) in zip(reader.computations, comps, strict=True):
        comp.is_fusion_computation = bool(fusion)
        comp.parent = module
        built: list[Instruction] = []
        for opcode, shape, _, attrs, iname, literal, number, extra in rows:
            if number is not None:
                _index(number, 1 << 31)
            instr = Instruction(
                Opcode(opcode),
                shapes[_index(shape, len(shapes))],
                (),
                reader.value(attrs),
                str(iname),
                literal=reader.value(literal),
                parameter_number=number,
                extra_attrs=reader.value(extra),
            )
            instr.parent = comp
            built.append(instr)
        for instr, row in zip(built, rows, strict=True):  # operands may come later in the list
            instr.operands = [built[_index(k, len(built))] for k in row[2]]
        comp.instructions = built
        comp.root = built[_index(root, len(built))] if root is not None else None
        module.computations.append(comp)
    module.entry = (
        reader.computations[_index(entry, len(reader.computations))] if entry is not None else None
    )
    module.rename_all()
    return module
