"""Shape rules: unary, binary and ternary elementwise ops, compare, complex and map.

Operands of an elementwise op have identical dims and element type (no implicit broadcasting: HLO
has none). The element types each op accepts follow XLA's shape inference, made strict where XLA
defers the error to its emitters (shifts of floats, clamp of complex): a program the interpreter
cannot give a meaning to is rejected here, with the op, the operand shapes and what is allowed.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.dtypes import DType
from hlort.ir.attributes import ComparisonDirection, ComparisonType, default_comparison_type
from hlort.ir.computation import Computation
from hlort.ir.op_def import INT, REAL
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.ir.shape_rules.dimension_lists import integer_tuple
from hlort.shape import ArrayShape, Shape

_KIND_WORDS = {
    "pred": "pred",
    "sint": "signed integer",
    "uint": "unsigned integer",
    "float": "floating-point",
    "complex": "complex",
}

# The element-type families of the unary and binary ops whose rule is "one family set", from
# the op table (OpDef.types).
UNARY_KINDS: dict[Opcode, frozenset[str]] = {
    op: op.info.types
    for op in Opcode
    if op.info.arity == 1 and op.info.elementwise and op.info.types is not None
}
BINARY_KINDS: dict[Opcode, frozenset[str]] = {
    op: op.info.types
    for op in Opcode
    if op.info.arity == 2 and op.info.elementwise and op.info.types is not None
}


def describe_kinds(kinds: frozenset[str]) -> str:
    """``{"float", "complex"}`` -> ``"floating-point or complex"`` (for error messages)."""
    words = [_KIND_WORDS[k] for k in ("pred", "sint", "uint", "float", "complex") if k in kinds]
    if set(kinds) >= INT:
        words = [w for w in words if "integer" not in w]
        words.insert(1 if "pred" in kinds else 0, "integer")
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def check_kind(q: ShapeQuery, shape: ArrayShape, kinds: frozenset[str], what: str) -> None:
    if shape.dtype.kind not in kinds:
        q.fail(f"{what} must have a {describe_kinds(kinds)} element type, got {shape}")


def _same_operands(q: ShapeQuery) -> list[ArrayShape]:
    shapes = [q.array(i) for i in range(len(q.operands))]
    first = shapes[0]
    if any(s != first for s in shapes[1:]):
        q.fail(
            "operands must have identical dims and element type, got "
            + ", ".join(str(s) for s in shapes)
            + "; insert broadcast or convert to make them match"
        )
    return shapes


@shape_rule(*UNARY_KINDS)
def _unary(q: ShapeQuery) -> Shape:
    x = q.array(0)
    check_kind(q, x, UNARY_KINDS[q.opcode], "the operand")
    if q.opcode is Opcode.IS_FINITE:
        return ArrayShape(dtypes.PRED, x.dims)
    if q.opcode in (Opcode.ABS, Opcode.REAL, Opcode.IMAG) and x.dtype.is_complex:
        return ArrayShape(x.dtype.component, x.dims)
    return x


@shape_rule(Opcode.COPY)
def _copy(q: ShapeQuery) -> Shape:
    return q.operands[0]


@shape_rule(*BINARY_KINDS)
def _binary(q: ShapeQuery) -> Shape:
    lhs, _ = _same_operands(q)
    check_kind(q, lhs, BINARY_KINDS[q.opcode], "operands")
    return lhs


def _allowed_comparison_types(dtype: DType) -> tuple[ComparisonType, ...]:
    if dtype.is_float:
        return (ComparisonType.FLOAT, ComparisonType.TOTALORDER)
    return (default_comparison_type(dtype),)


def comparison_of(q: ShapeQuery) -> tuple[ComparisonDirection, ComparisonType | None]:
    """The (direction, comparison_type) attributes, accepting enums or their spellings."""
    raw = q.attr("direction")
    try:
        direction = ComparisonDirection(getattr(raw, "value", raw))
    except ValueError:
        q.fail(f"direction {raw!r} is not one of {', '.join(d.value for d in ComparisonDirection)}")
    raw_type = q.attrs.get("comparison_type")
    if raw_type is None:
        return direction, None
    try:
        return direction, ComparisonType(getattr(raw_type, "value", raw_type))
    except ValueError:
        q.fail(
            f"comparison_type {raw_type!r} is not one of "
            f"{', '.join(t.value for t in ComparisonType)}"
        )


@shape_rule(Opcode.COMPARE)
def _compare(q: ShapeQuery) -> Shape:
    lhs, _ = _same_operands(q)
    direction, ctype = comparison_of(q)
    dtype = lhs.dtype
    if ctype is not None and ctype not in _allowed_comparison_types(dtype):
        allowed = " or ".join(t.value for t in _allowed_comparison_types(dtype))
        q.fail(f"comparison_type {ctype.value} does not apply to {lhs}; use {allowed}")
    if dtype.is_complex and direction not in (ComparisonDirection.EQ, ComparisonDirection.NE):
        # StableHLO orders complex numbers lexicographically; XLA only compares them for equality.
        q.fail(f"complex operands ({lhs}) compare only with EQ or NE, got {direction.value}")
    return ArrayShape(dtypes.PRED, lhs.dims)


@shape_rule(Opcode.COMPLEX)
def _complex(q: ShapeQuery) -> Shape:
    lhs, _ = _same_operands(q)
    result = {"f32": dtypes.C64, "f64": dtypes.C128}.get(lhs.dtype.name)
    if result is None:
        q.fail(f"operands must be f32 (giving c64) or f64 (giving c128), got {lhs}")
    return ArrayShape(result, lhs.dims)


@shape_rule(Opcode.SELECT)
def _select(q: ShapeQuery) -> Shape:
    pred, on_true, on_false = (q.array(i) for i in range(3))
    if not pred.dtype.is_pred:
        q.fail(f"the predicate (operand 0) must be pred, got {pred}")
    if on_true != on_false:
        q.fail(f"on_true and on_false must have identical shapes, got {on_true} and {on_false}")
    if pred.rank != 0 and pred.dims != on_true.dims:
        q.fail(f"the predicate {pred} must be a scalar or have the dims of {on_true}")
    return on_true


@shape_rule(Opcode.CLAMP)
def _clamp(q: ShapeQuery) -> Shape:
    low, x, high = (q.array(i) for i in range(3))
    check_kind(q, x, REAL, "the operand")
    for name, bound in (("min", low), ("max", high)):
        if bound.dtype != x.dtype or (bound.rank != 0 and bound.dims != x.dims):
            q.fail(
                f"{name} {bound} must have the element type of the operand {x} and be a "
                f"scalar or have its dims"
            )
    return x


@shape_rule(Opcode.MAP)
def _map(q: ShapeQuery) -> Shape:
    if not q.operands:
        q.fail("map needs at least one operand")
    shapes = [q.array(i) for i in range(len(q.operands))]
    dims = shapes[0].dims
    if any(s.dims != dims for s in shapes):
        q.fail("operands must have the same dims, got " + ", ".join(str(s) for s in shapes))
    dimensions = integer_tuple(q, q.attr("dimensions", tuple(range(len(dims)))), "dimensions")
    if dimensions != tuple(range(len(dims))):
        q.fail(
            f"dimensions={list(dimensions)}: map applies to all dimensions in order, "
            f"{list(range(len(dims)))} for rank {len(dims)}"
        )
    comp = q.attr("to_apply")
    if not isinstance(comp, Computation) or comp.root is None:
        q.fail("to_apply must be a finished computation")
    params = comp.parameter_shapes
    if len(params) != len(shapes):
        q.fail(
            f"to_apply {comp.name} takes {len(params)} parameter(s) but map has "
            f"{len(shapes)} operand(s)"
        )
    for i, (p, s) in enumerate(zip(params, shapes, strict=True)):
        if not (isinstance(p, ArrayShape) and p.rank == 0 and p.dtype == s.dtype):
            q.fail(
                f"parameter {i} of to_apply {comp.name} must be {s.dtype}[] to match "
                f"operand {s}, got {p}"
            )
    result = comp.result_shape
    if not (isinstance(result, ArrayShape) and result.rank == 0):
        q.fail(f"to_apply {comp.name} must return a scalar, got {result}")
    return ArrayShape(result.dtype, dims)
