"""Common subexpression elimination: one instruction per distinct computation of a value.

Two instructions are the same when opcode, result shape, operands, attributes and literal are
the same. Operands of commutative ops are compared as a set (``add(a, b)`` equals ``add(b, a)``);
constants compare bit for bit together with their element type (so NaNs with the same payload
merge, ``-0.0`` and ``0.0`` do not, and ``f32 1.0`` never meets ``s32 1065353216``). Identical
called computations (the ``add_f32`` and ``add_f32.1`` reducers two builders made) are merged
first, module-wide, so the instructions calling them compare equal. Side-effecting instructions
are never merged. Metadata (``extra_attrs``) is not part of the identity.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

import numpy as np

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.side_effects import SideEffects
from hlort.passes.dce import remove_unreachable_computations
from hlort.passes.pass_base import Pass
from hlort.passes.side_effects import unfused_computations
from hlort.passes.use_graph import UseGraph
from hlort.shape import ArrayShape, Shape, TupleShape


def shape_key(shape: Shape) -> Any:
    """A hashable identity of a shape, layouts ignored."""
    if isinstance(shape, ArrayShape):
        return (shape.dtype.name, shape.dims)
    if isinstance(shape, TupleShape):
        return tuple(shape_key(e) for e in shape.elements)
    return "token"


def literal_key(literal: Any) -> Any:
    """Bitwise identity of a constant's value (element type included)."""
    if isinstance(literal, tuple):
        return tuple(literal_key(v) for v in literal)
    arr = np.ascontiguousarray(literal)
    return (arr.dtype.str, arr.shape, arr.tobytes())


class _Keys:
    """Canonical keys of attributes, with computations replaced by their representatives."""

    def __init__(self) -> None:
        self.canonical: dict[Computation, Computation] = {}

    def comp(self, comp: Computation) -> Computation:
        return self.canonical.get(comp, comp)

    def value(self, v: Any) -> Any:
        if isinstance(v, Computation):
            return ("computation", self.comp(v))
        if isinstance(v, (list, tuple)):
            return tuple(self.value(x) for x in v)
        if isinstance(v, enum.Enum):
            return (type(v).__name__, v.value)
        if isinstance(v, np.ndarray):
            return literal_key(v)
        if dataclasses.is_dataclass(v) or isinstance(v, (int, float, str, bool, type(None))):
            return v
        return repr(v)

    def attrs(self, instr: Instruction) -> Any:
        return tuple(sorted((k, self.value(v)) for k, v in instr.attrs.items()))

    def instruction(self, instr: Instruction, operands: tuple) -> Any:
        return (
            instr.opcode,
            shape_key(instr.shape),
            operands,
            self.attrs(instr),
            literal_key(instr.literal) if instr.opcode is Opcode.CONSTANT else None,
            instr.parameter_number,
        )

    def computation(self, comp: Computation) -> Any:
        order = comp.post_order()
        index = {i: n for n, i in enumerate(order)}
        body = tuple(self.instruction(i, tuple(index[o] for o in i.operands)) for i in order)
        return (comp.is_fusion_computation, body, index[comp.root])


def merge_identical_computations(module: Module, keys: _Keys) -> bool:
    """Point every caller of a computation at the first structurally identical one.

    Fused computations are only compared (so two equal fusions of the same operands merge as
    instructions); each fusion keeps its own computation, as backends and XLA expect.
    """
    seen: dict[Any, Computation] = {}
    for comp in module.reachable_computations():
        if comp is module.entry:
            continue
        key = keys.computation(comp)
        first = seen.setdefault(key, comp)
        if first is not comp:
            keys.canonical[comp] = first
    if not keys.canonical:
        return False
    changed = False
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode is Opcode.FUSION:
                continue
            for name in instr.opcode.info.called:
                value = instr.attrs.get(name)
                if isinstance(value, Computation) and value in keys.canonical:
                    instr.attrs[name] = keys.comp(value)
                    changed = True
                elif isinstance(value, (list, tuple)) and any(c in keys.canonical for c in value):
                    instr.attrs[name] = tuple(keys.comp(c) for c in value)
                    changed = True
    if changed:
        remove_unreachable_computations(module)
    return changed


def cse_computation(comp: Computation, effects: SideEffects, keys: _Keys | None = None) -> bool:
    """Merge equal instructions of ``comp``; True if any was merged."""
    keys = keys or _Keys()
    order = comp.post_order()
    position = {i: n for n, i in enumerate(order)}
    table: dict[Any, Instruction] = {}
    graph: UseGraph | None = None
    for instr in order:
        if graph is not None and graph.is_removed(instr):
            continue
        if instr.opcode is Opcode.PARAMETER or effects.of(instr):
            continue
        operands = tuple(instr.operands)
        if instr.opcode.info.commutative and len(instr.operands) == 2:
            a, b = instr.operands
            if position[b] < position[a]:
                operands = (b, a)
        key = keys.instruction(instr, operands)
        first = table.setdefault(key, instr)
        if first is instr:
            continue
        graph = graph or UseGraph(comp, effects)
        graph.replace(instr, first)
    if graph is None:
        return False
    graph.commit()
    return True


class CommonSubexpressionElimination(Pass):
    name = "cse"

    def run(self, module: Module) -> bool:
        keys = _Keys()
        effects = SideEffects()
        changed = merge_identical_computations(module, keys)
        for comp in unfused_computations(module):
            changed |= cse_computation(comp, effects, keys)
        return changed
