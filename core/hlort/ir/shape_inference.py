"""Shape inference: one rule per opcode, registered with :func:`shape_rule`.

A rule receives a :class:`ShapeQuery` (operand shapes, attributes, and the declared result shape
when there is one) and returns the result shape, raising INVALID_ARGUMENT through ``q.fail`` when
the operands or attributes are wrong. Ops whose result cannot be derived from operands alone
(broadcast, reshape, convert, iota, constant, parameter, custom-call...) validate ``q.declared``
and return it. The builder calls rules to infer; the verifier calls them to check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any, NoReturn

from hlort.errors import InvalidArgument, Unimplemented
from hlort.ir.op_registry import OpRegistry
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass
from hlort.shape import ArrayShape, Shape, TupleShape

ShapeRule = Callable[["ShapeQuery"], Shape]
SHAPE_RULES: OpRegistry[Opcode, ShapeRule] = OpRegistry(
    "shape rule",
    # the common families on first use, the rarer ones when a rule is not among those
    modules=(
        "hlort.ir.shape_rules.conversions",
        "hlort.ir.shape_rules.convolution",
        "hlort.ir.shape_rules.data_movement",
        "hlort.ir.shape_rules.elementwise",
        "hlort.ir.shape_rules.leaves",
        "hlort.ir.shape_rules.linalg",
        "hlort.ir.shape_rules.reduction",
    ),
    later_modules=(
        "hlort.ir.shape_rules.collectives",
        "hlort.ir.shape_rules.control_flow",
        "hlort.ir.shape_rules.custom_call",
        "hlort.ir.shape_rules.dynamic_dimensions",
        "hlort.ir.shape_rules.fft",
        "hlort.ir.shape_rules.indexing",
        "hlort.ir.shape_rules.rng",
    ),
)


def shape_rule(*opcodes: Opcode) -> Callable[[ShapeRule], ShapeRule]:
    """Register the decorated function as the shape rule of ``opcodes``."""
    return SHAPE_RULES.register(*opcodes)


@dataclass
class ShapeQuery:
    opcode: Opcode
    operands: list[Shape]
    attrs: dict[str, Any] = field(default_factory=dict)
    declared: Shape | None = None
    name: str | None = None

    def fail(self, message: str) -> NoReturn:
        who = f"{self.opcode.value} {self.name}" if self.name else self.opcode.value
        raise InvalidArgument(f"{who}: {message}")

    def array(self, index: int) -> ArrayShape:
        """Operand ``index``, which must be an array (not a tuple or token)."""
        shape = self.operands[index]
        if not isinstance(shape, ArrayShape):
            self.fail(f"operand {index} must be an array, got {shape}")
        return shape

    def attr(self, key: str, default: Any = ...) -> Any:
        if key in self.attrs:
            return self.attrs[key]
        if default is ...:
            self.fail(f"missing attribute {key!r}")
        return default

    def need_declared(self) -> Shape:
        if self.declared is None:
            self.fail("the result shape must be given for this op")
        return self.declared

    def need_declared_array(self) -> ArrayShape:
        shape = self.need_declared()
        if not isinstance(shape, ArrayShape):
            self.fail(f"result must be an array shape, got {shape}")
        return shape


def has_rule(opcode: Opcode) -> bool:
    return opcode in SHAPE_RULES


def infer_shape(
    opcode: Opcode,
    operand_shapes: list[Shape],
    attrs: dict[str, Any] | None = None,
    declared: Shape | None = None,
    name: str | None = None,
) -> Shape:
    """The result shape of ``opcode`` applied to operands of ``operand_shapes``.

    Raises INVALID_ARGUMENT (wrong operands) or UNIMPLEMENTED (no rule for the op).
    """
    q = ShapeQuery(opcode, list(operand_shapes), dict(attrs or {}), declared, name)
    arity = opcode.info.arity
    if arity is not None and len(operand_shapes) != arity:
        q.fail(f"takes {arity} operand(s), got {len(operand_shapes)}")
    rule = SHAPE_RULES.get(opcode)
    if rule is None:
        raise Unimplemented(f"no shape rule for op {opcode.value!r}")
    result = rule(q)
    if declared is not None and not _compatible(result, declared):
        q.fail(f"declared shape {declared} does not match the inferred shape {result}")
    return declared if declared is not None else result


def _compatible(inferred: Shape, declared: Shape) -> bool:
    if isinstance(inferred, TupleShape) and isinstance(declared, TupleShape):
        return len(inferred.elements) == len(declared.elements) and all(
            _compatible(a, b) for a, b in zip(inferred.elements, declared.elements, strict=True)
        )
    return inferred == declared
