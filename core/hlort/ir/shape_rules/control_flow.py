"""Shape rules: while, conditional, call, fusion, tuple, get-tuple-element, opt-barrier, after-all.

The ops that call computations check the callee's signature against their operands here, so a
mismatched loop body or branch is rejected when it is built or verified, with both sides named.
"""

from __future__ import annotations

from collections.abc import Sequence

from hlort import dtypes
from hlort.ir.attributes import FusionKind
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.shape import TOKEN, Shape, TupleShape, scalar

_PRED_SCALAR = scalar(dtypes.PRED)


def signature(comp: Computation) -> str:
    """``(s32[], f32[4]) -> f32[4]``: how messages show a computation's type."""
    params = ", ".join(str(s) for s in comp.parameter_shapes)
    result = str(comp.root.shape) if comp.root is not None else "<no root>"
    return f"({params}) -> {result}"


def called(q: ShapeQuery, key: str) -> Computation:
    """The computation in attribute ``key``, which must be a finished computation."""
    comp = q.attr(key)
    if not isinstance(comp, Computation):
        q.fail(f"attribute {key!r} must be a computation, got {type(comp).__name__}")
    if comp.root is None:
        q.fail(f"{key} computation {comp.name} has no ROOT instruction")
    return comp


def check_parameters(
    q: ShapeQuery, comp: Computation, expected: Sequence[Shape], role: str
) -> None:
    """``comp`` must take exactly ``expected``; the message shows both signatures."""
    if list(comp.parameter_shapes) != list(expected):
        want = ", ".join(str(s) for s in expected)
        q.fail(
            f"{role} computation {comp.name} must take ({want}), but its signature is "
            f"{signature(comp)}"
        )


@shape_rule(Opcode.WHILE)
def _while(q: ShapeQuery) -> Shape:
    state = q.operands[0]
    condition = called(q, "condition")
    body = called(q, "body")
    check_parameters(q, condition, [state], "condition")
    if condition.result_shape != _PRED_SCALAR:
        q.fail(
            f"condition computation {condition.name} must return pred[], but its signature is "
            f"{signature(condition)}"
        )
    check_parameters(q, body, [state], "body")
    if body.result_shape != state:
        q.fail(
            f"body computation {body.name} must return the loop state {state}, but its "
            f"signature is {signature(body)}"
        )
    return state


@shape_rule(Opcode.CONDITIONAL)
def _conditional(q: ShapeQuery) -> Shape:
    if not q.operands:
        q.fail("needs a selector operand (pred[] or s32[]) and one operand per branch")
    selector = q.operands[0]
    branches = q.attr("branch_computations")
    if not isinstance(branches, (tuple, list)) or not branches:
        q.fail("branch_computations must be a non-empty sequence of computations")
    if selector == _PRED_SCALAR:
        if len(branches) != 2:
            q.fail(f"a pred[] selector needs exactly 2 branches [true, false], got {len(branches)}")
    elif selector != scalar(dtypes.S32):
        q.fail(f"the selector (operand 0) must be pred[] or s32[], got {selector}")
    if len(q.operands) != 1 + len(branches):
        q.fail(
            f"{len(branches)} branch(es) need {1 + len(branches)} operands (the selector and one "
            f"per branch), got {len(q.operands)}"
        )
    result: Shape | None = None
    first = ""
    for i, comp in enumerate(branches):
        if not isinstance(comp, Computation) or comp.root is None:
            q.fail(f"branch {i} must be a finished computation, got {comp!r}")
        check_parameters(q, comp, [q.operands[1 + i]], f"branch {i}")
        if result is None:
            result, first = comp.result_shape, comp.name
        elif comp.result_shape != result:
            q.fail(
                f"all branches must return the same shape: branch 0 ({first}) returns {result}, "
                f"branch {i} ({comp.name}) returns {comp.result_shape}"
            )
    assert result is not None
    return result


@shape_rule(Opcode.CALL)
def _call(q: ShapeQuery) -> Shape:
    comp = called(q, "to_apply")
    check_parameters(q, comp, q.operands, "to_apply")
    return comp.result_shape


@shape_rule(Opcode.FUSION)
def _fusion(q: ShapeQuery) -> Shape:
    kind = q.attr("kind")
    if not isinstance(kind, FusionKind):
        q.fail(f"attribute 'kind' must be a FusionKind (kLoop, kInput, ...), got {kind!r}")
    comp = called(q, "calls")
    check_parameters(q, comp, q.operands, "fused")
    return comp.result_shape


@shape_rule(Opcode.TUPLE)
def _tuple(q: ShapeQuery) -> Shape:
    return TupleShape(tuple(q.operands))


@shape_rule(Opcode.GET_TUPLE_ELEMENT)
def _get_tuple_element(q: ShapeQuery) -> Shape:
    operand = q.operands[0]
    if not isinstance(operand, TupleShape):
        q.fail(f"operand must be a tuple, got {operand}")
    index = q.attr("index")
    if isinstance(index, bool) or not isinstance(index, int):
        q.fail(f"index must be an integer, got {index!r}")
    if not 0 <= index < len(operand.elements):
        q.fail(f"index={index} is out of range for the {len(operand.elements)}-tuple {operand}")
    return operand.elements[index]


@shape_rule(Opcode.OPTIMIZATION_BARRIER)
def _optimization_barrier(q: ShapeQuery) -> Shape:
    return q.operands[0]


@shape_rule(Opcode.AFTER_ALL)
def _after_all(q: ShapeQuery) -> Shape:
    for i, operand in enumerate(q.operands):
        if not operand.is_token:
            q.fail(f"every operand must be a token; operand {i} is {operand}")
    return TOKEN
