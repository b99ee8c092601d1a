"""HloInstruction: one node of a computation's dataflow graph."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from hlort.ir.opcodes import Opcode
from hlort.shape import Shape

if TYPE_CHECKING:
    import numpy as np

    from hlort.ir.computation import Computation

_ids = itertools.count()


class Instruction:
    """An operation producing one value of ``shape`` from ``operands``.

    ``attrs`` holds the op's typed attributes (see :mod:`hlort.ir.attributes` for the keys per op);
    called computations live in ``attrs`` too, under the names in ``opcode.info.called``.
    ``extra_attrs`` keeps attributes hlort does not interpret (``metadata``, ``sharding``,
    ``frontend_attributes``...) as raw text, so printing gives back what was parsed.
    """

    __slots__ = (
        "opcode",
        "shape",
        "operands",
        "attrs",
        "name",
        "parent",
        "literal",
        "parameter_number",
        "extra_attrs",
        "uid",
        "__weakref__",
    )

    def __init__(
        self,
        opcode: Opcode,
        shape: Shape,
        operands: list[Instruction] | tuple[Instruction, ...] = (),
        attrs: dict[str, Any] | None = None,
        name: str | None = None,
        *,
        literal: np.ndarray | tuple | None = None,
        parameter_number: int | None = None,
        extra_attrs: dict[str, str] | None = None,
    ):
        self.opcode = opcode
        self.shape = shape
        self.operands: list[Instruction] = list(operands)
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.name = name or f"{opcode.value.replace('-', '_')}"
        self.parent: Computation | None = None
        self.literal = literal
        self.parameter_number = parameter_number
        self.extra_attrs: dict[str, str] = dict(extra_attrs or {})
        self.uid = next(_ids)

    # -- called computations ------------------------------------------------------------------
    def called_computations(self) -> list[Computation]:
        """Computations this instruction calls, in attribute order (branches in order)."""
        out = []
        for key in self.opcode.info.called:
            value = self.attrs.get(key)
            if value is None:
                continue
            if isinstance(value, (list, tuple)):
                out.extend(value)
            else:
                out.append(value)
        return out

    @property
    def to_apply(self) -> Computation:
        return self.attrs["to_apply"]

    # -- properties ---------------------------------------------------------------------------
    @property
    def is_elementwise(self) -> bool:
        if self.opcode is Opcode.BITCAST_CONVERT:
            return self.operands[0].shape.dtype.bits == self.shape.dtype.bits
        return self.opcode.info.elementwise

    @property
    def has_side_effect(self) -> bool:
        if self.opcode is Opcode.CUSTOM_CALL:
            return bool(self.attrs.get("has_side_effect", False))
        if self.opcode is Opcode.RNG_BIT_GENERATOR:
            return False
        return self.opcode.info.side_effect

    def operand_index(self, operand: Instruction) -> int:
        for i, op in enumerate(self.operands):
            if op is operand:
                return i
        raise ValueError(f"{operand.name} is not an operand of {self.name}")

    def replace_operand(self, old: Instruction, new: Instruction) -> None:
        self.operands = [new if op is old else op for op in self.operands]

    def clone_with(self, operands=None, shape=None, attrs=None) -> Instruction:
        """A detached copy (no parent), with optionally new operands, shape or attrs."""
        copy = Instruction(
            self.opcode,
            shape if shape is not None else self.shape,
            list(operands if operands is not None else self.operands),
            dict(attrs if attrs is not None else self.attrs),
            self.name,
            literal=self.literal,
            parameter_number=self.parameter_number,
            extra_attrs=dict(self.extra_attrs),
        )
        return copy

    def __repr__(self) -> str:
        operands = ", ".join(o.name for o in self.operands)
        return f"<{self.name} = {self.shape} {self.opcode.value}({operands})>"
