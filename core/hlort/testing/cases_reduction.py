"""Case generators for reductions, windows, sort and top-k.

Sums are compared with the ``accumulate`` tolerance (a backend may add in another order);
max/min and selections are exact. Sorts are stable and order floats by TOTALORDER, so the
expected permutation is unique even with NaN and -0.0 among the keys.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.attributes import ComparisonDirection, window_from_sizes
from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.shape import array, scalar
from hlort.testing.case_helpers import identity, param, random_inputs, reducer
from hlort.testing.op_case import CaseSpec, generates

S32 = dtypes.S32


def _order_type(dt: DType) -> str | None:
    return "TOTALORDER" if dt.is_float else None


def _argmin(b: Builder, dt: DType) -> Computation:
    """(v0, i0, v1, i1) -> the (value, index) pair with the smaller value, then smaller index."""
    sub = b.sub(f"argmin_{dt.name}")
    v0, i0 = sub.parameter(scalar(dt), "v0"), sub.parameter(scalar(S32), "i0")
    v1, i1 = sub.parameter(scalar(dt), "v1"), sub.parameter(scalar(S32), "i1")
    order = _order_type(dt)
    less = sub.compare(v0, v1, ComparisonDirection.LT, order)
    equal = sub.compare(v0, v1, ComparisonDirection.EQ, order)
    first = sub.compare(i0, i1, ComparisonDirection.LT)
    take0 = sub.or_(less, sub.and_(equal, first))
    return b._comp(sub.finish(sub.tuple([sub.select(take0, v0, v1), sub.select(take0, i0, i1)])))


@generates(Opcode.REDUCE)
def reduce(op: Opcode, dt: DType) -> list[CaseSpec]:
    def simple(opcode: Opcode, dims_in, dims):
        def build(b: Builder):
            return b.reduce(
                param(b, dt, dims_in), identity(b, opcode, dt), reducer(b, opcode, dt), dims
            )

        return build

    def argmin(b: Builder):
        values, index = param(b, dt, (3, 5)), b.iota(array(S32, (3, 5)), 1)
        if dt.is_float:
            init = b.constant(float("nan"), dtype=dt)
        else:
            init = identity(b, Opcode.MINIMUM, dt)
        init_index = b.constant(2**31 - 1, dtype=S32)
        return b.reduce([values, index], [init, init_index], _argmin(b, dt), [1])

    return [
        CaseSpec("add-rows", simple(Opcode.ADD, (3, 5), [1]), kind="accumulate"),
        CaseSpec("add-empty", simple(Opcode.ADD, (0, 3), [0]), kind="accumulate"),
        CaseSpec("max-all", simple(Opcode.MAXIMUM, (4, 5), [0, 1]), kind="exact"),
        CaseSpec("min-columns", simple(Opcode.MINIMUM, (4, 5), [0]), kind="exact"),
        CaseSpec("argmin-variadic", argmin, kind="bits"),
    ]


@generates(Opcode.REDUCE_WINDOW)
def reduce_window(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(opcode: Opcode, window):
        def build(b: Builder):
            return b.reduce_window(
                param(b, dt, (4, 5)), identity(b, opcode, dt), reducer(b, opcode, dt), window
            )

        return build

    pool = window_from_sizes([2, 2], [2, 2], [(0, 1), (1, 0)])
    sums = window_from_sizes([3, 1], [1, 1], window_dilation=[1, 2], padding=[(1, 1), (0, 0)])
    dilated = window_from_sizes([2, 2], [1, 2], base_dilation=[2, 1])
    return [
        CaseSpec("max-pool", build_for(Opcode.MAXIMUM, pool), kind="exact"),
        CaseSpec("add-dilated", build_for(Opcode.ADD, sums), kind="accumulate"),
        CaseSpec("max-base-dilation", build_for(Opcode.MAXIMUM, dilated), kind="exact"),
    ]


@generates(Opcode.SELECT_AND_SCATTER)
def select_and_scatter(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        sub = b.sub(f"select_ge_{dt.name}")
        x, y = sub.parameter(scalar(dt), "x"), sub.parameter(scalar(dt), "y")
        select = b._comp(sub.finish(sub.compare(x, y, "GE", _order_type(dt))))
        operand, source = param(b, dt, (4, 6)), param(b, dt, (2, 3))
        window = window_from_sizes([2, 2], [2, 2])
        return b.select_and_scatter(
            operand, select, window, source, identity(b, Opcode.ADD, dt), reducer(b, Opcode.ADD, dt)
        )

    return [
        CaseSpec("max-pool-grad", build, kind="accumulate"),
        CaseSpec("random", build, inputs=random_inputs(-4, 4), kind="accumulate"),
    ]


@generates(Opcode.SORT)
def sort(op: Opcode, dt: DType) -> list[CaseSpec]:
    order = _order_type(dt)

    def keys(direction: str, dims):
        def build(b: Builder):
            x = param(b, dt, dims)
            return b.sort([x], b.comparator([dt], direction, order), 1, is_stable=True)

        return build

    def key_value(b: Builder):
        k, v = param(b, dt, (24,)), param(b, S32, (24,))
        return b.sort([k, v], b.comparator([dt, S32], "LT", order), 0, is_stable=True)

    return [
        CaseSpec("ascending", keys("LT", (3, 8))),
        CaseSpec("descending", keys("GT", (2, 16))),
        CaseSpec("key-value", key_value),
        CaseSpec("empty", keys("LT", (0, 4))),
    ]


@generates(Opcode.TOPK)
def topk(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("largest", lambda b: b.top_k(param(b, dt, (3, 8)), 3)),
        CaseSpec("smallest", lambda b: b.top_k(param(b, dt, (2, 16)), 4, largest=False)),
        CaseSpec("k0", lambda b: b.top_k(param(b, dt, (2, 5)), 0)),
    ]
