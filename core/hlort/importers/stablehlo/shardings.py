"""Shardings in StableHLO, as JAX emits them, onto the HLO module the partitioner reads.

Two spellings: ``mhlo.sharding = "{devices=[2,1]0,1}"`` (HLO sharding text, on function
arguments, results and ops such as ``custom_call @Sharding``), and Shardy's
``sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>`` naming the axes of a module-level
``sdy.mesh @mesh = <["x"=2, "y"=2]>`` (device ids ``0..N-1`` unless ``device_ids=[...]``). A
Shardy dimension sharding lists mesh axes, major first; axes no dimension uses replicate the
value (a trailing replicated subgroup). Sub-axes (``"x":(1)2``) are not
supported (UNIMPLEMENTED naming them).
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from hlort.errors import HlortError, InvalidArgument, ParseError, Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.sharding import HloSharding
from hlort.shape import TupleShape
from hlort.text.sharding_syntax import parse_sharding, set_sharding

_MESH = re.compile(r"sdy\.mesh\s+@([\w.$-]+)\s*=\s*<(.*)>", re.S)
_AXIS = re.compile(r'"([^"]+)"\s*=\s*(\d+)')
_DEVICE_IDS = re.compile(r"device_ids\s*=\s*\[([\d,\s]*)\]")
_SHARDING = re.compile(r"\s*(?:@([\w.$-]+)|mesh\s*<(.*?)>)\s*,\s*\[(.*)\]\s*(.*)$", re.S)
_DIM = re.compile(r"\{([^{}]*)\}(?:p\d+)?")
_AXIS_REF = re.compile(r'"([^"]+)"(:\(\d+\)\d+)?')


class Mesh:
    """A Shardy mesh: named axes with sizes, and the device id at each mesh position."""

    def __init__(self, axes: list[tuple[str, int]], device_ids: list[int] | None = None):
        self.axes = axes
        count = math.prod(size for _, size in axes)
        ids = list(range(count)) if device_ids is None else device_ids
        if len(ids) != count:
            raise InvalidArgument(
                f"sdy.mesh with axes {axes} has {count} devices but device_ids lists {len(ids)}"
            )
        self.devices = np.asarray(ids, np.int64).reshape([s for _, s in axes] or [1])

    @classmethod
    def parse(cls, body: str) -> Mesh:
        axes_text = body.split("]", 1)[0]
        axes = [(name, int(size)) for name, size in _AXIS.findall(axes_text)]
        ids = _DEVICE_IDS.search(body)
        device_ids = [int(v) for v in ids.group(1).split(",") if v.strip()] if ids else None
        return cls(axes, device_ids)

    def index(self, axis: str) -> int:
        for i, (name, _) in enumerate(self.axes):
            if name == axis:
                return i
        raise InvalidArgument(
            f"sdy.sharding names mesh axis {axis!r}; the mesh has {[n for n, _ in self.axes]}"
        )


def meshes_of(mlir: ast.MlirModule) -> dict[str, Mesh]:
    out = {}
    for text in mlir.attrs.get("sdy.meshes", []):
        m = _MESH.match(text.strip())
        if m is None:
            raise InvalidArgument(f"cannot read the mesh {text.strip()!r}")
        out[m.group(1)] = Mesh.parse(m.group(2))
    return out


def sdy_to_hlo(raw: str, meshes: dict[str, Mesh]) -> HloSharding:
    """``@mesh, [{"x"}, {}]`` (the body of ``#sdy.sharding<...>``) -> HloSharding."""
    m = _SHARDING.match(raw)
    if m is None:
        raise InvalidArgument(f"cannot read the sdy.sharding <{raw}>")
    if m.group(1) is not None:
        mesh = meshes.get(m.group(1))
        if mesh is None:
            raise InvalidArgument(f"sdy.sharding names mesh @{m.group(1)}, which is not defined")
    else:
        mesh = Mesh.parse(m.group(2))
    dims: list[list[int]] = []
    for body in _DIM.findall(m.group(3)):
        axes = []
        for name, sub in _AXIS_REF.findall(body):
            if sub:
                raise Unimplemented(f"sdy.sharding sub-axis {name}{sub} is not supported")
            axes.append(mesh.index(name))
        dims.append(axes)
    used = [a for axes in dims for a in axes]
    rest = [a for a in range(len(mesh.axes)) if a not in used]
    if not mesh.axes or not used:
        if mesh.axes or mesh.devices.size != 1:
            return HloSharding.replicate()
        return HloSharding.maximal(int(mesh.devices.reshape(-1)[0]))
    array = mesh.devices.transpose(used + rest)
    shape = [math.prod(mesh.axes[a][1] for a in axes) for axes in dims]
    kinds: tuple[str, ...] = ()
    if rest:
        shape.append(math.prod(mesh.axes[a][1] for a in rest))
        kinds = ("replicated",)
    return HloSharding.tiled(array.reshape(shape), kinds)


def sharding_from_attrs(attrs: dict[str, Any], meshes: dict[str, Mesh]) -> HloSharding | None:
    """The sharding an op's, argument's or result's attributes give (None: none)."""
    value = attrs.get("mhlo.sharding")
    if isinstance(value, str) and value.strip():  # jax2tf writes "" for "no sharding"
        return parse_sharding(value, "mhlo.sharding")
    value = attrs.get("sdy.sharding")
    if isinstance(value, ast.StructAttr) and "raw" in value.fields:
        return sdy_to_hlo(value.fields["raw"], meshes)
    if isinstance(value, str):
        return sdy_to_hlo(value.strip().removeprefix("<").removesuffix(">"), meshes)
    return None


def partition_counts(mlir: ast.MlirModule) -> tuple[int, int]:
    def count(key: str) -> int:
        value = mlir.attrs.get(key, 1)
        try:
            return int(value)
        except (TypeError, ValueError):
            raise InvalidArgument(
                f"module attribute {key} must be an integer, got {value!r}"
            ) from None

    return count("mhlo.num_replicas"), count("mhlo.num_partitions")


def apply_entry_shardings(
    mlir: ast.MlirModule, func: ast.Function, module: Module, num_results: int
) -> None:
    """The importer's hook: argument shardings onto the entry's parameters, result shardings
    onto its root (the converter reads the partition counts)."""
    meshes = meshes_of(mlir)
    params = module.entry.parameters
    for param, attrs in zip(params, func.arg_attrs, strict=False):
        s = _located(lambda a=attrs: sharding_from_attrs(a, meshes), f"@{func.name} {param.name}")
        if s is not None:
            set_sharding(param, s)
    results = [
        _located(lambda a=a: sharding_from_attrs(a, meshes), f"@{func.name} result {i}")
        for i, a in enumerate(func.result_attrs)
    ]
    if not any(r is not None for r in results):
        return
    results = [r or HloSharding.replicate() for r in results]
    root = module.entry.root
    if isinstance(root.shape, TupleShape) and len(root.shape.elements) == num_results:
        set_sharding(root, HloSharding.tuple_of(results))
    elif num_results == 1 and not isinstance(root.shape, TupleShape):
        set_sharding(root, results[0])


def apply_op_sharding(
    mlir: ast.MlirModule, op: ast.Operation, instructions: list[Instruction]
) -> None:
    """``mhlo.sharding`` / ``sdy.sharding`` on an op (custom_call @Sharding...) onto the
    instruction it became."""
    if "mhlo.sharding" not in op.attrs and "sdy.sharding" not in op.attrs:
        return
    s = sharding_from_attrs(op.attrs, meshes_of(mlir))
    if s is None:
        return
    if len(instructions) == 1:
        set_sharding(instructions[0], s)
    elif s.is_tuple and len(s.elements) == len(instructions):
        for instr, element in zip(instructions, s.elements, strict=True):
            set_sharding(instr, element)


def _located(fn, where: str):
    try:
        return fn()
    except ParseError as err:
        raise InvalidArgument(f"{where}: {err.message}") from None
    except HlortError as err:
        raise type(err)(f"{where}: {err.message}", err.code) from None
