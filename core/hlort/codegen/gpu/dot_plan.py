"""Which dots hlort's own tiled dot kernel computes, and the index maps it reads them through.

Any ``dot_general`` of arrays (float, integer, pred or complex elements): batch
dimensions anywhere in either operand, any number of contracting and free dimensions, in any
order. The kernel sees every dot as ``C[b, m, n] = sum_k A[b, m, k] * B[b, k, n]``: ``b``, ``m``,
``n`` and ``k`` are the row-major flattening of the batch, lhs-free, rhs-free and contracting
dimensions (the contracting ones in the order the dimension numbers pair them), which is the
result's own row-major layout (batch..., lhs free..., rhs free...), as the interpreter defines
it. Each flat index reaches an operand element through an :class:`IndexMap`: its digits in the
operand's dimensions, times those dimensions' strides.

Accumulation is the interpreter's (contraction_arith.py): f32 for narrow floats and f32, f64
when f64 is involved, wrapping i32 / i64 for integers, c64 / c128 for complex dots (the naive
``(ac - bd) + (ad + bc)i`` product), pred operands as 0 and 1 (counted into an integer result),
and a pred x pred dot into pred as the OR of ANDs, as XLA does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hlort.codegen.gpu.contraction_arith import accumulation_type
from hlort.dtypes import DType
from hlort.ir.instruction import Instruction


@dataclass(frozen=True)
class IndexMap:
    """A flat index over ``sizes`` (row-major, last fastest) -> sum of digit x stride."""

    sizes: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.sizes)

    @property
    def unit_minor(self) -> bool:
        """Whether consecutive flat indices are consecutive elements (stride 1 fastest)."""
        return bool(self.sizes) and self.strides[-1] == 1


@dataclass(frozen=True)
class DotPlan:
    batch: int
    m: int
    n: int
    k: int
    lhs_dtype: DType
    rhs_dtype: DType
    out_dtype: DType
    acc_dtype: DType
    lhs_batch: IndexMap
    lhs_m: IndexMap
    lhs_k: IndexMap
    rhs_batch: IndexMap
    rhs_n: IndexMap
    rhs_k: IndexMap


def _strides(dims: tuple[int, ...]) -> list[int]:
    out, step = [0] * len(dims), 1
    for d in range(len(dims) - 1, -1, -1):
        out[d] = step
        step *= dims[d]
    return out


def _index_map(dims: tuple[int, ...], which: list[int]) -> IndexMap:
    strides = _strides(dims)
    return IndexMap(tuple(dims[d] for d in which), tuple(strides[d] for d in which))


def plan_dot(dot: Instruction) -> tuple[DotPlan | None, str]:
    """(plan, "") or (None, why the dot kernel does not compute ``dot``)."""
    lhs, rhs = (o.shape for o in dot.operands)
    if not (lhs.is_array and rhs.is_array and dot.shape.is_array):
        return None, "its operands or result are not arrays"
    acc = accumulation_type(lhs.dtype, rhs.dtype, dot.shape.dtype)
    dn = dot.attrs["dot_dimension_numbers"]
    lb, rb = list(dn.lhs_batch_dims), list(dn.rhs_batch_dims)
    lc, rc = list(dn.lhs_contracting_dims), list(dn.rhs_contracting_dims)
    lf = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    plan = DotPlan(
        batch=math.prod(lhs.dims[d] for d in lb),
        m=math.prod(lhs.dims[d] for d in lf),
        n=math.prod(rhs.dims[d] for d in rf),
        k=math.prod(lhs.dims[d] for d in lc),
        lhs_dtype=lhs.dtype,
        rhs_dtype=rhs.dtype,
        out_dtype=dot.shape.dtype,
        acc_dtype=acc,
        lhs_batch=_index_map(lhs.dims, lb),
        lhs_m=_index_map(lhs.dims, lf),
        lhs_k=_index_map(lhs.dims, lc),
        rhs_batch=_index_map(rhs.dims, rb),
        rhs_n=_index_map(rhs.dims, rf),
        rhs_k=_index_map(rhs.dims, rc),
    )
    if plan.batch * plan.m * plan.n >= 1 << 62 or plan.k >= 1 << 62:
        return None, "the dot is too large for 64-bit flat indices"
    return plan, ""


__all__ = ["DotPlan", "IndexMap", "plan_dot"]
