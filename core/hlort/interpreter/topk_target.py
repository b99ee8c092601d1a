"""The ``TopK`` custom call XLA:CPU leaves in optimized HLO for ``jax.lax.top_k``.

``(values, indices) = custom-call(x), custom_call_target="TopK",
called_computations={compare-greater-than}``: along the last dimension of ``x`` (rank 1 or 2),
the k largest values (k = the results' last dimension) in descending order and their s32
positions. The order is XLA's total order of the comparator it prints (floats compared through
their bits with the sign trick: NaN above +inf, +0 above -0), ties in index order.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.interpreter.ops.sort import top_k
from hlort.ir.custom_calls import register_custom_call, require_operand_count, target_name
from hlort.ir.shape_inference import ShapeQuery
from hlort.shape import ArrayShape, Shape, TupleShape


def _shape(q: ShapeQuery) -> Shape:
    require_operand_count(q, 1)
    operand = q.array(0)
    declared = q.declared
    ok = (
        isinstance(declared, TupleShape)
        and len(declared.elements) == 2
        and all(isinstance(e, ArrayShape) for e in declared.elements)
        and operand.rank in (1, 2)
    )
    if ok:
        values, indices = declared.elements
        k = values.dims[-1] if values.rank else -1
        ok = (
            values.dtype == operand.dtype
            and indices.dtype == dtypes.S32
            and values.dims == indices.dims
            and values.dims[:-1] == operand.dims[:-1]
            and 0 <= k <= operand.dims[-1]
        )
    if not ok:
        q.fail(
            f"target {target_name(q)!r} takes a rank-1 or rank-2 operand and declares "
            f"(values, s32 indices) of its shape with the last dimension k <= its own; "
            f"operand {operand}, result {declared}"
        )
    return declared


def _evaluate(ev, instr, x):
    return top_k(x, instr.shape.elements[0].dims[-1])


def register_topk_target() -> None:
    register_custom_call(
        "TopK", _shape, _evaluate, description="XLA:CPU's top-k (jax.lax.top_k) along the last dim"
    )
