"""Shape refinement: the ``?`` dimensions of a StableHLO program become the sizes it is called with.

StableHLO's answer to shape polymorphism (its ``stablehlo-refine-shapes`` pass, and XLA's): once
the argument types are known, propagate them through the program until every type is static.
hlort refines while it converts, on the parsed MLIR tree: the arguments are bound with the
concrete shapes (:func:`bind_arguments`), and an op whose declared result type has a ``?`` gets
its static type here before it is checked (:func:`refine_and_convert`):

- ops whose result shape is a value (``dynamic_broadcast_in_dim``, ``dynamic_reshape``,
  ``dynamic_iota``, ``real_dynamic_slice``, and ``broadcast_in_dim``/``reshape`` written with a
  ``?``) have a rule in :mod:`.refine_rules`: the shape operand is folded to a constant (the
  importer's constant folding; ``get_dimension_size`` of a refined value is a constant) and
  becomes the result's dims;
- every other op is converted as is and the builder's shape inference gives the result's
  shape, which must agree with the declared type's static dims and rank.

The dynamic ops then convert to their static forms (convert_dynamic.py). A called function is
refined per call site (:func:`specialization`): its arguments take the operands' shapes, and
scalar integer operands that are constants (JAX's dimension arguments, ``jax.global_constant``)
are bound as those constants, so the callee's shape computations fold too. ``shape_assertion``
custom calls are checked on the folded values (:func:`check_shape_assertion`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hlort.errors import InvalidArgument, Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext
from hlort.importers.stablehlo.refine_rules import REFINERS, fold_operand
from hlort.importers.stablehlo.types import to_shape
from hlort.ir.instruction import Instruction
from hlort.shape import ArrayShape, Shape, TupleShape

if TYPE_CHECKING:
    from hlort.importers.stablehlo.convert_module import ModuleConverter, Scope

SHAPE_ASSERTION = "shape_assertion"
_PLACEHOLDER = re.compile(r"\{(\d+)\}")
_MAX_CONSTANT_ARGUMENT = 64  # elements: larger constant operands are passed, not specialized on


def is_static_type(t) -> bool:
    """True when ``t`` has no ``?`` dimension (at any depth of a tuple)."""
    if isinstance(t, ast.TensorType):
        return t.is_static
    if isinstance(t, ast.TupleType):
        return all(is_static_type(e) for e in t.types)
    return True


def conforms(t, shape: Shape) -> bool:
    """Whether a value of ``shape`` may be passed where MLIR type ``t`` is declared: same rank
    and element type, equal static dims (``?`` takes any size)."""
    if isinstance(t, ast.TensorType) and isinstance(shape, ArrayShape):
        static = ast.TensorType(tuple(1 for _ in t.dims), t.element, t.encoding)
        if to_shape(static).dtype != shape.dtype or len(t.dims) != shape.rank:
            return False
        return all(d < 0 or d == s for d, s in zip(t.dims, shape.dims, strict=True))
    if isinstance(t, ast.TupleType) and isinstance(shape, TupleShape):
        return len(t.types) == len(shape.elements) and all(
            conforms(e, s) for e, s in zip(t.types, shape.elements, strict=True)
        )
    return is_static_type(t) and to_shape(t) == shape


def refined_type(t, shape: Shape, what: str):
    """``t`` with its ``?`` dims taken from ``shape``; INVALID_ARGUMENT when they disagree."""
    if is_static_type(t):
        return t
    if not conforms(t, shape):
        raise InvalidArgument(f"{what} is {shape}, which does not conform to its type {t}")
    if isinstance(t, ast.TupleType):
        return ast.TupleType(
            tuple(refined_type(e, s, what) for e, s in zip(t.types, shape.elements, strict=True))
        )
    return ast.TensorType(tuple(shape.dims), t.element, t.encoding)


class _RefiningContext(OpContext):
    """The op's converter, run to learn its result shapes: reading a result type that still has
    a ``?`` is a missing refinement rule, said as such."""

    def result_shape(self, i: int = 0) -> Shape:
        if i < len(self.op.result_types) and not is_static_type(self.op.result_types[i]):
            raise Unimplemented(
                f"{self.op.name}: shape refinement has no rule for result {i} of type "
                f"{self.op.result_types[i]} (its converter needs the static result type); add "
                f"one to hlort.importers.stablehlo.refine_rules"
            )
        return super().result_shape(i)


def refine_and_convert(
    conv: ModuleConverter, scope: Scope, op: ast.Operation, fn
) -> tuple[ast.Operation, list[Instruction]]:
    """Convert ``op`` whose declared result types have ``?`` dims; returns the op with static
    result types and its converted results."""
    rule = REFINERS.get(op.name)
    if rule is not None:
        types = rule(OpContext(conv, scope, op))
        refined = dataclasses.replace(op, result_types=list(types))
        return refined, list(fn(OpContext(conv, scope, refined)))
    results = list(fn(_RefiningContext(conv, scope, op)))
    if len(results) != len(op.result_types):
        return op, results  # the caller reports the count mismatch
    types = [
        refined_type(t, r.shape, f"{op.name} result {i}")
        for i, (t, r) in enumerate(zip(op.result_types, results, strict=True))
    ]
    return dataclasses.replace(op, result_types=types), results


# -- shape assertions ---------------------------------------------------------------------------
def is_shape_assertion(op: ast.Operation) -> bool:
    return op.name == "stablehlo.custom_call" and op.attrs.get("call_target_name") in (
        SHAPE_ASSERTION,
        "@" + SHAPE_ASSERTION,
    )


def check_shape_assertion(conv: ModuleConverter, scope: Scope, op: ast.Operation) -> None:
    """JAX's ``shape_assertion(pred, values...) {error_message}``: the predicate folds to a
    constant once shapes are refined; false is INVALID_ARGUMENT with the message, its ``{i}``
    placeholders filled with the values."""
    cx = OpContext(conv, scope, op)
    passed = fold_operand(cx, 0, "the asserted predicate")
    if bool(np.all(passed)):
        return
    values = [fold_operand(cx, i, f"value {i}") for i in range(1, len(op.operands))]
    message = str(op.attrs.get("error_message", "shape assertion failed"))

    def fill(m: re.Match) -> str:
        i = int(m.group(1))
        return str(values[i].reshape(-1)[0]) if i < len(values) and values[i].size else m.group(0)

    raise InvalidArgument(f"shape_assertion failed: {_PLACEHOLDER.sub(fill, message)}")


# -- arguments and call sites -------------------------------------------------------------------
def needs_specialization(func: ast.Function) -> bool:
    return not all(is_static_type(t) for _, t in func.args)


def specialization(
    func: ast.Function, operands: Sequence[Instruction], constant_value
) -> tuple[tuple, list[Shape], dict[int, np.ndarray]]:
    """The key, argument shapes and constant-bound arguments of ``func`` called with
    ``operands``: every operand's shape, plus the values of small constant integer operands."""
    if len(operands) != len(func.args):
        raise InvalidArgument(
            f"@{func.name} takes {len(func.args)} argument(s), the call passes {len(operands)}"
        )
    shapes = [o.shape for o in operands]
    constants: dict[int, np.ndarray] = {}
    for i, o in enumerate(operands):
        shape = o.shape
        small = isinstance(shape, ArrayShape) and shape.size <= _MAX_CONSTANT_ARGUMENT
        if small and shape.dtype.is_integer:
            value = constant_value(o)
            if value is not None:
                constants[i] = value
    key = (
        func.name,
        tuple(str(s) for s in shapes),
        tuple((i, v.tobytes()) for i, v in sorted(constants.items())),
    )
    return key, shapes, constants


def bind_arguments(
    scope: Scope,
    func: ast.Function,
    shapes: Sequence[Shape | None],
    constants: dict[int, np.ndarray],
    *,
    keep_constant_parameters: bool,
    hlo_name,
) -> None:
    """Define ``func``'s arguments in ``scope`` with the given shapes; an argument in
    ``constants`` is that constant (still a parameter of the computation when
    ``keep_constant_parameters``: a call passes every operand)."""
    b = scope.builder
    for i, (arg_name, arg_type) in enumerate(func.args):
        if i in constants:
            value = np.asarray(constants[i])
            if is_static_type(arg_type):
                declared = to_shape(arg_type)
                value = value.astype(declared.dtype.numpy).reshape(declared.dims)
            if keep_constant_parameters:
                b.parameter(shapes[i], hlo_name(arg_name[1:]))
            scope.define(arg_name, b.constant(value), arg_type)
            continue
        shape = shapes[i]
        if shape is None:
            shape = to_shape(arg_type, f"@{func.name} argument {arg_name}: ")
        where = f"@{func.name} argument {arg_name}"
        scope.define(
            arg_name,
            b.parameter(shape, hlo_name(arg_name[1:])),
            refined_type(arg_type, shape, where),
        )
