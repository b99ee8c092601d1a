"""Shape rules: set-dimension-size and get-dimension-size (XLA's bounded dynamism).

``set-dimension-size(x, size), dimensions={d}`` gives ``x``'s shape with dimension ``d`` marked
dynamic, bounded by its static size (``f32[8]`` -> ``f32[<=8]``); ``size`` is an s32 scalar.
``get-dimension-size(x), dimensions={d}`` is an s32 scalar.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.shape import ArrayShape, Shape


def _dimension(q: ShapeQuery, operand: ArrayShape) -> int:
    dims = tuple(q.attr("dimensions"))
    if len(dims) != 1 or not isinstance(dims[0], int) or not 0 <= dims[0] < operand.rank:
        q.fail(f"dimensions={list(dims)} must name one dimension of operand {operand}")
    return dims[0]


@shape_rule(Opcode.SET_DIMENSION_SIZE)
def _set_dimension_size(q: ShapeQuery) -> Shape:
    operand = q.array(0)
    size = q.array(1)
    if size.dims or size.dtype != dtypes.S32:
        q.fail(f"the size (operand 1) must be an s32 scalar, got {size}")
    d = _dimension(q, operand)
    flags = list(operand.dynamic or (False,) * operand.rank)
    flags[d] = True
    return ArrayShape(operand.dtype, operand.dims, operand.layout, tuple(flags))


@shape_rule(Opcode.GET_DIMENSION_SIZE)
def _get_dimension_size(q: ShapeQuery) -> Shape:
    _dimension(q, q.array(0))
    return ArrayShape(dtypes.S32, ())
