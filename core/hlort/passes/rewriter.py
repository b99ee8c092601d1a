"""Rewriter: what a simplification rule may do to the computation it is rewriting.

Rules build replacement instructions with :meth:`Rewriter.make` (shape inferred and checked by the
op's shape rule) and return the instruction that replaces the one they matched. If a rule gives
up after building something, the pass removes what it built, so a failed rule leaves no trace and
the pass stays idempotent. The value helpers (:func:`splat`) answer "is this operand a constant
whose every element is v?", looking through broadcasts and reshapes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hlort import dtypes
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import infer_shape
from hlort.passes.use_graph import UseGraph
from hlort.shape import ArrayShape, Shape


class Rewriter:
    def __init__(self, graph: UseGraph, module: Module):
        self.graph = graph
        self.module = module
        self.added: list[Instruction] = []

    def make(
        self, opcode: Opcode, operands: list[Instruction], shape: Shape | None = None, **attrs: Any
    ) -> Instruction:
        """Add ``opcode(operands)``; raises INVALID_ARGUMENT if the shape rule rejects it."""
        result = infer_shape(opcode, [o.shape for o in operands], attrs, shape)
        instr = Instruction(opcode, result, operands, attrs)
        self.graph.add(instr)
        self.added.append(instr)
        return instr

    def constant(self, value: np.ndarray) -> Instruction:
        arr = np.array(value, order="C")
        shape = ArrayShape(dtypes.from_numpy(arr.dtype), arr.shape)
        instr = Instruction(Opcode.CONSTANT, shape, (), name="constant", literal=arr)
        self.graph.add(instr)
        self.added.append(instr)
        return instr

    def broadcast_scalar(self, scalar: Instruction, like: ArrayShape) -> Instruction:
        if isinstance(scalar.shape, ArrayShape) and scalar.shape.dims == like.dims:
            return scalar
        return self.make(
            Opcode.BROADCAST, [scalar], like.with_dtype(scalar.shape.dtype), dimensions=()
        )

    def discard_unused(self) -> None:
        """Remove what this rule built and nothing uses (a rule that gave up)."""
        for instr in reversed(self.added):
            self.graph.remove_if_dead(instr)
        self.added = []


def splat(instr: Instruction) -> np.ndarray | None:
    """The 0-d value when every element of ``instr`` is one constant value (bitwise), else None.

    Looks through broadcast and reshape. Arrays with no elements have no value.
    """
    while instr.opcode in (Opcode.BROADCAST, Opcode.RESHAPE):
        instr = instr.operands[0]
    if instr.opcode is not Opcode.CONSTANT or not isinstance(instr.shape, ArrayShape):
        return None
    literal = np.asarray(instr.literal)
    if literal.size == 0:
        return None
    flat = literal.reshape(-1)
    if literal.size > 1:
        raw = flat.view(np.uint8).reshape(flat.size, flat.dtype.itemsize)
        # Most constants are not splats: a strided sample (first and last included) rejects
        # them without reading every byte, which the simplifier would do on every run.
        sample = raw[np.linspace(0, flat.size - 1, min(flat.size, _SAMPLE)).astype(np.intp)]
        if not (sample == raw[0]).all() or not (raw == raw[0]).all():
            return None
    return flat[0:1].reshape(())


_SAMPLE = 64  # elements splat() compares before it compares them all


def as_float(value: np.ndarray) -> float:
    return float(np.asarray(value).astype(np.float64))


def is_float_zero(value: np.ndarray, negative: bool) -> bool:
    v = as_float(value)
    return v == 0.0 and bool(np.signbit(v)) == negative
