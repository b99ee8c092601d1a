"""Case generators for data movement: results must be bit-identical to the reference.

Index operands (dynamic-slice starts, gather and scatter indices) get chosen values, in range
and out of range, since out-of-range starts are clamped (or, for scatter, skipped) by XLA's
rules and backends get exactly that wrong.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.attributes import GatherDimensionNumbers, ScatterDimensionNumbers
from hlort.ir.opcodes import Opcode
from hlort.shape import array
from hlort.testing.case_helpers import fixed_tail, overwrite, param, reducer
from hlort.testing.op_case import CaseSpec, generates
from hlort.testing.values import edge_values, mixed

S32 = dtypes.S32


@generates(Opcode.BROADCAST)
def broadcast(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("scalar", lambda b: b.broadcast(param(b, dt), [2, 3], [])),
        CaseSpec("row", lambda b: b.broadcast(param(b, dt, (3,)), [2, 3, 4], [1])),
        CaseSpec("empty", lambda b: b.broadcast(param(b, dt, (0,)), [2, 0], [1])),
    ]


@generates(Opcode.RESHAPE)
def reshape(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("merge", lambda b: b.reshape(param(b, dt, (2, 3, 4)), [6, 4])),
        CaseSpec("scalar", lambda b: b.reshape(param(b, dt), [1, 1])),
        CaseSpec("empty", lambda b: b.reshape(param(b, dt, (0, 3)), [3, 0])),
    ]


@generates(Opcode.BITCAST)
def bitcast(op: Opcode, dt: DType) -> list[CaseSpec]:
    def cast(dims, result, layout):
        return lambda b: b.op(Opcode.BITCAST, (param(b, dt, dims),), array(dt, result, layout))

    return [
        CaseSpec("column_major", cast((2, 3), (3, 2), (0, 1))),  # the transpose
        CaseSpec("flatten", cast((2, 3, 4), (24,), (0,))),
        CaseSpec("permuted", cast((2, 3, 4), (4, 6), (0, 1))),
    ]


@generates(Opcode.TRANSPOSE)
def transpose(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("rank3", lambda b: b.transpose(param(b, dt, (2, 3, 4)), [2, 0, 1])),
        CaseSpec("empty", lambda b: b.transpose(param(b, dt, (0, 3)), [1, 0])),
    ]


@generates(Opcode.SLICE)
def slice_(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("strided", lambda b: b.slice(param(b, dt, (5, 6)), [1, 0], [4, 6], [2, 3])),
        CaseSpec("empty", lambda b: b.slice(param(b, dt, (5, 6)), [2, 2], [2, 6])),
    ]


def _starts(*values: int):
    return [np.array(v, dtype=np.int32) for v in values]


@generates(Opcode.DYNAMIC_SLICE)
def dynamic_slice(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        x = param(b, dt, (5, 6))
        return b.dynamic_slice(x, [param(b, S32), param(b, S32)], [2, 3])

    return [
        CaseSpec("in-range", build, inputs=fixed_tail(*_starts(1, 2))),
        CaseSpec("clamped", build, inputs=fixed_tail(*_starts(-3, 100))),
    ]


@generates(Opcode.DYNAMIC_UPDATE_SLICE)
def dynamic_update_slice(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        x, update = param(b, dt, (5, 6)), param(b, dt, (2, 3))
        return b.dynamic_update_slice(x, update, [param(b, S32), param(b, S32)])

    return [
        CaseSpec("in-range", build, inputs=fixed_tail(*_starts(2, 1))),
        CaseSpec("clamped", build, inputs=fixed_tail(*_starts(7, -1))),
    ]


@generates(Opcode.CONCATENATE)
def concatenate(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(dims_list, dim):
        return lambda b: b.concatenate([param(b, dt, d) for d in dims_list], dim)

    return [
        CaseSpec("rows", build_for([(2, 3), (1, 3), (0, 3)], 0)),
        CaseSpec("columns", build_for([(2, 1), (2, 4)], 1)),
        CaseSpec("all-empty", build_for([(0, 2), (0, 2), (0, 2)], 0)),  # JAX's split gradient
    ]


@generates(Opcode.PAD)
def pad(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec(
            "interior-negative",
            lambda b: b.pad(param(b, dt, (3, 4)), param(b, dt), [(1, 2, 1), (-1, 0, 2)]),
        ),
        CaseSpec(
            "empty-operand",
            lambda b: b.pad(param(b, dt, (0, 2)), param(b, dt), [(1, 1, 0), (0, 1, 0)]),
        ),
    ]


@generates(Opcode.REVERSE)
def reverse(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("both", lambda b: b.reverse(param(b, dt, (3, 4)), [0, 1])),
        CaseSpec("empty", lambda b: b.reverse(param(b, dt, (0, 3)), [0])),
    ]


_GATHER = GatherDimensionNumbers(
    offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=1
)


@generates(Opcode.GATHER)
def gather(op: Opcode, dt: DType) -> list[CaseSpec]:
    def rows(b: Builder):
        return b.gather(param(b, dt, (5, 4)), param(b, S32, (4, 1)), _GATHER, [1, 4])

    def window(b: Builder):
        dnums = GatherDimensionNumbers(
            offset_dims=(1, 2), collapsed_slice_dims=(), start_index_map=(0, 1), index_vector_dim=1
        )
        return b.gather(param(b, dt, (5, 4)), param(b, S32, (3, 2)), dnums, [2, 3])

    return [
        CaseSpec("rows", rows, inputs=fixed_tail(np.array([[0], [4], [7], [-2]]))),
        CaseSpec("windows", window, inputs=fixed_tail(np.array([[0, 0], [4, 3], [1, -5]]))),
    ]


_SCATTER = ScatterDimensionNumbers(
    update_window_dims=(1,),
    inserted_window_dims=(0,),
    scatter_dims_to_operand_dims=(0,),
    index_vector_dim=1,
)


@generates(Opcode.SCATTER)
def scatter(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_with(combiner):
        def build(b: Builder):
            x, idx, upd = param(b, dt, (5, 4)), param(b, S32, (3, 1)), param(b, dt, (3, 4))
            return b.scatter([x], idx, [upd], combiner(b), _SCATTER)

        return build

    store = build_with(lambda b: overwrite(b, dt))
    add = build_with(lambda b: reducer(b, Opcode.ADD, dt))
    return [
        CaseSpec("store-unique", store, inputs=_scatter_inputs(dt, [[0], [3], [9]]), kind="bits"),
        CaseSpec(
            "add-duplicates", add, inputs=_scatter_inputs(dt, [[1], [1], [-1]]), kind="accumulate"
        ),
    ]


def _scatter_inputs(dt: DType, indices):
    def make(rng, shapes):
        operand = mixed(dt, shapes[0].dims, rng)
        updates = mixed(dt, shapes[2].dims, rng)
        return [operand, np.array(indices, dtype=np.int32), updates]

    return make


@generates(Opcode.IOTA)
def iota(op: Opcode, dt: DType) -> list[CaseSpec]:
    return [
        CaseSpec("dim1", lambda b: b.iota(array(dt, (3, 4)), 1)),
        CaseSpec("dim0", lambda b: b.iota(array(dt, (5, 2)), 0)),
        CaseSpec("empty", lambda b: b.iota(array(dt, (0, 3)), 0)),
    ]


@generates(Opcode.CONSTANT)
def constant(op: Opcode, dt: DType) -> list[CaseSpec]:
    edges = edge_values(dt)
    return [
        CaseSpec("edges", lambda b: b.constant(edges, dtype=dt)),
        CaseSpec("scalar", lambda b: b.constant(edges[-1], dtype=dt)),
        CaseSpec("empty", lambda b: b.constant(np.zeros((0, 2), dt.numpy), dtype=dt)),
    ]
