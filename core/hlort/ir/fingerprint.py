"""Module fingerprints: a SHA-256 over a canonical walk of the IR, not over its text.

Equal programs get equal fingerprints, and anything that changes what a module computes changes
its fingerprint. The walk hashes, for every instruction of the entry computation and of every
computation it calls: the opcode, the shape (a missing layout counts as the default one), the
operands by position in the computation's post order, the parameter number, every attribute
(values by content: enums by name, dimension-number dataclasses field by field, called
computations by their own digest and by which computation they are: one called twice differs
from two equal copies) and the literal's bytes; then the module's replica and partition counts
and the header attributes that change what it computes (input/output aliasing, buffer donors).
Names, metadata and other ``extra_attrs`` and unique ids are left out, but for ``sharding``
when the module has several partitions (it decides the per-device programs). The instruction order
counts (the walk follows it): backends may number their kernels in that order, as the cpu
plugin's object cache does, so equal fingerprints must mean equal structure, not only equal
results. No text is printed, so a process loading a cached executable never imports the text
package for it.
"""

from __future__ import annotations

import dataclasses
import enum
import struct
from typing import TYPE_CHECKING, Any

import numpy as np

from hlort.dtypes import DType
from hlort.sha256 import sha256
from hlort.shape import ArrayShape, Shape, TokenShape, TupleShape

if TYPE_CHECKING:
    from hlort.ir.computation import Computation
    from hlort.ir.module import Module

SEMANTIC_HEADER_KEYS = ("entry_computation_layout", "input_output_alias", "buffer_donor")
# The entry layout is kept in the text (XLA's) but nothing here reads it: instruction shapes
# carry the layouts, so it does not count.
_HASHED_HEADER_KEYS = (
    "input_output_alias",
    "buffer_donor",
    "spmd_parameters_shardings",
    "spmd_output_sharding",
)
_VERSION = b"hlort-fingerprint-1"


def module_fingerprint(module: Module) -> str:
    h = sha256(_VERSION)
    for key in _HASHED_HEADER_KEYS:
        value = module.attributes.get(key)
        if value is not None:
            h.update(f"{key}={value!r};".encode())
    config = module.config
    h.update(
        f"replicas={config.get('num_replicas', 1)};"
        f"partitions={config.get('num_partitions', 1)};".encode()
    )
    if module.entry is not None:
        # shardings change the per-device programs only when there are several partitions
        spmd = int(config.get("num_partitions", 1)) > 1
        h.update(_Walker(spmd).computation(module.entry).encode())
    return h.hexdigest()


def computation_fingerprint(comp: Computation) -> str:
    """The digest :func:`module_fingerprint` walks ``comp`` to, alone (names and metadata left
    out): two computations with equal digests compute the same thing, so a backend may compile
    one kernel for both."""
    return _Walker().computation(comp)


class _Walker:
    def __init__(self, shardings: bool = False) -> None:
        self.shardings = shardings
        self.digests: dict[Computation, str] = {}
        self.numbers: dict[Computation, int] = {}  # computation -> order of first reference

    def computation(self, comp: Computation) -> str:
        digest = self.digests.get(comp)
        if digest is not None:
            return digest
        self.digests[comp] = "recursive"  # HLO has no recursion; never loop on a bad graph
        order = comp.post_order()
        h = sha256(expect=64 * len(order))  # ~64 bytes an instruction
        position = {instr: k for k, instr in enumerate(order)}
        for instr in order:
            parts = [
                instr.opcode.value,
                shape_key(instr.shape),
                ",".join(str(position[o]) for o in instr.operands),
            ]
            if instr.parameter_number is not None:
                parts.append(f"param={instr.parameter_number}")
            for key in sorted(instr.attrs):
                parts.append(f"{key}={self.value(instr.attrs[key])}")
            if instr.literal is not None:
                parts.append(f"literal={literal_key(instr.literal)}")
            if self.shardings and "sharding" in instr.extra_attrs:
                parts.append(f"sharding={instr.extra_attrs['sharding']}")
            h.update(("\x1e".join(parts) + "\x1d").encode())
        if comp.root is not None:
            h.update(f"root={position[comp.root]}".encode())
        digest = h.hexdigest()
        self.digests[comp] = digest
        return digest

    def value(self, v: Any) -> str:
        from hlort.ir.computation import Computation

        if v is None or isinstance(v, (bool, int, str)):
            return repr(v)  # repr escapes separators inside strings
        if isinstance(v, float):
            return "f" + struct.pack("<d", v).hex()  # exact: -0.0 and NaN payloads included
        if isinstance(v, Computation):
            number = self.numbers.setdefault(v, len(self.numbers))
            return f"comp{number}:{self.computation(v)}"
        if isinstance(v, enum.Enum):
            return f"{type(v).__name__}.{v.name}"
        if isinstance(v, DType):
            return "dtype:" + v.name
        if isinstance(v, Shape):
            return "shape:" + shape_key(v)
        if isinstance(v, (tuple, list)):
            kind = "" if type(v) in (tuple, list) else type(v).__name__  # a NamedTuple's type
            return kind + "(" + ",".join(self.value(x) for x in v) + ")"
        if isinstance(v, dict):
            return "{" + ",".join(f"{self.value(k)}:{self.value(v[k])}" for k in sorted(v)) + "}"
        if dataclasses.is_dataclass(v):
            fields = ",".join(
                f"{f.name}={self.value(getattr(v, f.name))}" for f in dataclasses.fields(v)
            )
            return f"{type(v).__name__}({fields})"
        if isinstance(v, (np.ndarray, np.generic)):
            return literal_key(np.asarray(v))
        return f"{type(v).__module__}.{type(v).__qualname__}:{v!r}"


def shape_key(shape: Shape) -> str:
    if isinstance(shape, ArrayShape):
        dims = shape.dims
        layout = shape.layout if shape.layout is not None else tuple(range(len(dims) - 1, -1, -1))
        return f"{shape.dtype.name}{list(dims)}{{{','.join(map(str, layout))}}}"
    if isinstance(shape, TupleShape):
        return "(" + ",".join(shape_key(e) for e in shape.elements) + ")"
    if isinstance(shape, TokenShape):
        return "token"
    return repr(shape)


def literal_key(literal) -> str:
    """Element type, shape and a digest of the bytes (exact: signed zeros, NaN payloads)."""
    if isinstance(literal, tuple):
        return "(" + ",".join(literal_key(x) for x in literal) + ")"
    a = np.ascontiguousarray(literal)
    return f"{a.dtype.name}{a.dtype.str}{list(a.shape)}:{sha256(a.tobytes()).hexdigest()}"
