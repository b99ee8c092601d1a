"""Refinement rules: the static result type of an op whose shape is a value, or whose converter
needs the static result type to build it.

Each rule takes the op's context (its operands already refined, so folded shape computations
are constants) and returns the op's result types with every ``?`` replaced. The declared
static dims must agree with the refined ones (INVALID_ARGUMENT naming both otherwise). Ops
without a rule are refined by the builder's shape inference (see shape_refinement.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hlort.errors import InvalidArgument, Unimplemented
from hlort.importers.stablehlo import mlir_ast as ast
from hlort.importers.stablehlo.conversion_context import OpContext
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

Rule = Callable[[OpContext], list]
REFINERS: dict[str, Rule] = {}


def refiner(*names: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for name in names:
            REFINERS[name] = fn
        return fn

    return register


def fold_operand(cx: OpContext, index: int, what: str) -> np.ndarray:
    """Operand ``index`` folded to a constant; UNIMPLEMENTED when it depends on runtime values
    (a data-dependent shape, which refinement cannot make static)."""
    value = cx.constant_value(cx.operand(index))
    if value is None:
        raise Unimplemented(
            f"{cx.op.name}: {what} (operand {index}) is computed from runtime values, not from "
            f"argument shapes, so it does not refine to a static shape (a data-dependent shape)"
        )
    return np.asarray(value)


def with_dims(cx: OpContext, dims: Sequence[int], i: int = 0) -> ast.TensorType:
    """Result ``i``'s declared type with ``dims``, checked against its static dims."""
    t = cx.op.result_types[i]
    if not isinstance(t, ast.TensorType):
        raise cx.invalid(f"result {i} must be a tensor, got {t}")
    dims = tuple(int(d) for d in dims)
    if len(dims) != len(t.dims):
        raise InvalidArgument(
            f"{cx.op.name}: the shape operand gives {len(dims)} dims {list(dims)}, but the "
            f"result type {t} has rank {len(t.dims)}"
        )
    if any(d < 0 for d in dims):
        raise InvalidArgument(f"{cx.op.name}: negative result dims {list(dims)} for {t}")
    for declared, actual in zip(t.dims, dims, strict=True):
        if declared >= 0 and declared != actual:
            raise InvalidArgument(
                f"{cx.op.name}: the refined result shape {list(dims)} contradicts its declared "
                f"type {t}"
            )
    return ast.TensorType(dims, t.element, t.encoding)


def _shape_operand(cx: OpContext, index: int, what: str) -> list[int]:
    return [int(v) for v in fold_operand(cx, index, what).reshape(-1)]


@refiner("stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_reshape")
def _from_output_dimensions(cx: OpContext) -> list:
    return [with_dims(cx, _shape_operand(cx, 1, "output_dimensions"))]


@refiner("stablehlo.dynamic_iota")
def _dynamic_iota(cx: OpContext) -> list:
    return [with_dims(cx, _shape_operand(cx, 0, "output_shape"))]


@refiner("stablehlo.real_dynamic_slice")
def _real_dynamic_slice(cx: OpContext) -> list:
    """ceil((limit - start) / stride) per dim; ``limit - start`` folds when both are constants,
    or when ``limit`` is ``start + sizes`` with constant ``sizes`` (JAX's ``x[i:i+n]``)."""
    strides = _shape_operand(cx, 3, "strides")
    if any(s <= 0 for s in strides):
        raise InvalidArgument(f"{cx.op.name}: strides must be positive, got {strides}")
    start, limit = cx.operand(1), cx.operand(2)
    extent = None
    if limit.opcode is Opcode.ADD:
        for i, other in ((0, 1), (1, 0)):
            if same_value(limit.operands[i], start):
                extent = cx.constant_value(limit.operands[other])
                break
    if extent is None:
        lo = _shape_operand(cx, 1, "start_indices")
        hi = _shape_operand(cx, 2, "limit_indices")
        extent = np.asarray(hi) - np.asarray(lo)
    sizes = [int(v) for v in np.asarray(extent).reshape(-1)]
    dims = [max(0, -(-n // s)) for n, s in zip(sizes, strides, strict=False)]
    return [with_dims(cx, dims)]


def same_value(a: Instruction, b: Instruction, depth: int = 16) -> bool:
    """Whether ``a`` and ``b`` compute the same value by construction (same op, attributes,
    literal and parameter, recursively the same operands): the importer does not merge the
    repeated index computations JAX emits, so identity alone misses them."""
    if a is b:
        return True
    if depth == 0 or a.opcode is not b.opcode or a.shape != b.shape or a.has_side_effect:
        return False
    if a.opcode is Opcode.PARAMETER:
        return a.parameter_number == b.parameter_number and a.parent is b.parent
    if a.opcode is Opcode.CONSTANT:
        la, lb = np.asarray(a.literal), np.asarray(b.literal)
        return la.dtype == lb.dtype and la.tobytes() == lb.tobytes()
    if repr(sorted(a.attrs.items())) != repr(sorted(b.attrs.items())):
        return False
    return len(a.operands) == len(b.operands) and all(
        same_value(x, y, depth - 1) for x, y in zip(a.operands, b.operands, strict=True)
    )


@refiner("stablehlo.broadcast_in_dim")
def _broadcast_in_dim(cx: OpContext) -> list:
    """A ``?`` result dim takes the size of the operand dim mapped to it."""
    t = cx.op.result_types[0]
    operand = cx.operand(0).shape
    mapping = cx.ints("broadcast_dimensions")
    dims = list(t.dims)
    for operand_dim, result_dim in enumerate(mapping):
        if result_dim < len(dims) and dims[result_dim] < 0:
            dims[result_dim] = operand.dims[operand_dim]
    if any(d < 0 for d in dims):
        raise InvalidArgument(
            f"{cx.op.name}: result dims {t} are not all mapped from the operand; use "
            f"dynamic_broadcast_in_dim with an output_dimensions operand"
        )
    return [with_dims(cx, dims)]


@refiner("stablehlo.reshape")
def _reshape(cx: OpContext) -> list:
    """One ``?`` result dim takes the remaining element count."""
    t = cx.op.result_types[0]
    unknown = [i for i, d in enumerate(t.dims) if d < 0]
    if len(unknown) != 1:
        raise InvalidArgument(f"{cx.op.name}: a result type {t} with several '?' dims is ambiguous")
    known = int(np.prod([d for d in t.dims if d >= 0], dtype=np.int64))
    total = cx.operand(0).shape.size
    if known == 0 or total % known:
        raise InvalidArgument(f"{cx.op.name}: {cx.operand(0).shape} does not reshape to {t}")
    dims = list(t.dims)
    dims[unknown[0]] = total // known
    return [with_dims(cx, dims)]
