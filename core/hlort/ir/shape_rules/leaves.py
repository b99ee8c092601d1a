"""Shape rules: parameter, constant, iota, replica-id, partition-id."""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import ShapeQuery, shape_rule
from hlort.shape import ArrayShape, Shape, scalar


@shape_rule(Opcode.PARAMETER)
def _parameter(q: ShapeQuery) -> Shape:
    return q.need_declared()


@shape_rule(Opcode.CONSTANT)
def _constant(q: ShapeQuery) -> Shape:
    shape = q.need_declared()
    literal = q.attrs.get("literal")
    if isinstance(shape, ArrayShape) and isinstance(literal, np.ndarray):
        if literal.shape != shape.dims or literal.dtype != shape.dtype.numpy:
            q.fail(f"literal of {literal.dtype}{list(literal.shape)} does not match shape {shape}")
    return shape


@shape_rule(Opcode.IOTA)
def _iota(q: ShapeQuery) -> Shape:
    shape = q.need_declared_array()
    dim = q.attr("iota_dimension")
    if shape.rank == 0:
        q.fail("iota needs a result of rank >= 1")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < shape.rank:
        q.fail(f"iota_dimension={dim!r} out of range for rank {shape.rank}")
    if shape.dtype.is_pred:
        q.fail("iota of pred is not allowed; use an integer or float type")
    return shape


@shape_rule(Opcode.REPLICA_ID, Opcode.PARTITION_ID)
def _device_id(q: ShapeQuery) -> Shape:
    return scalar(dtypes.U32)
