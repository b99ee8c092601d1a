"""Case generators for elementwise ops: unary, binary, compare, select, clamp, conversions, map.

The unary and binary generators serve every opcode the op table marks elementwise with that
arity; their element types are whatever the shape rules accept. Binary ops meet every pair of
edge values (``edge_grid``), unary ops every edge value.
"""

from __future__ import annotations

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.attributes import ComparisonDirection
from hlort.ir.opcodes import Opcode
from hlort.testing.case_helpers import edge_count, param, random_inputs
from hlort.testing.op_case import CaseSpec, default_kind, generates
from hlort.testing.values import edge_grid

_SPECIAL = {
    Opcode.COMPARE,
    Opcode.CONVERT,
    Opcode.REDUCE_PRECISION,
    Opcode.MAP,
    Opcode.BITCAST_CONVERT,
    Opcode.SELECT,
    Opcode.CLAMP,
}
UNARY = tuple(
    op for op in Opcode if op.info.elementwise and op.info.arity == 1 and op not in _SPECIAL
)
BINARY = tuple(
    op for op in Opcode if op.info.elementwise and op.info.arity == 2 and op not in _SPECIAL
)


def _grid_inputs(dt: DType):
    def make(rng, shapes):
        lhs, rhs = edge_grid(dt)
        return [lhs, rhs]

    return make


def _shapes_specs(build_for, dt: DType, edges_dims: tuple[int, ...], edges_inputs=None):
    """The four variants every elementwise op gets: edges, random, scalar, empty."""
    return [
        CaseSpec("edges", build_for(edges_dims), inputs=edges_inputs),
        CaseSpec("random", build_for((4, 6)), inputs=random_inputs()),
        CaseSpec("scalar", build_for(())),
        CaseSpec("empty", build_for((0, 3))),
    ]


@generates(*UNARY)
def unary(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(dims):
        return lambda b: b.op(op, (param(b, dt, dims),))

    return _shapes_specs(build_for, dt, (edge_count(dt),))


@generates(*BINARY)
def binary(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(dims):
        return lambda b: b.op(op, (param(b, dt, dims), param(b, dt, dims)))

    n = edge_count(dt)
    return _shapes_specs(build_for, dt, (n, n), _grid_inputs(dt))


@generates(Opcode.COMPARE)
def compare(op: Opcode, dt: DType) -> list[CaseSpec]:
    n = edge_count(dt)
    specs = []
    types = [None, "TOTALORDER"] if dt.is_float else [None]
    for ctype in types:
        for direction in ComparisonDirection:

            def build(b: Builder, d=direction.value, t=ctype, dims=(n, n)):
                return b.compare(param(b, dt, dims), param(b, dt, dims), d, t)

            suffix = "-total" if ctype else ""
            specs.append(CaseSpec(f"{direction.value}{suffix}", build, inputs=_grid_inputs(dt)))
    specs.append(CaseSpec("scalar", lambda b: b.compare(param(b, dt), param(b, dt), "EQ")))
    specs.append(
        CaseSpec("empty", lambda b: b.compare(param(b, dt, (0, 2)), param(b, dt, (0, 2)), "NE"))
    )
    return specs


@generates(Opcode.SELECT)
def select(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(pred_dims, dims):
        return lambda b: b.select(
            param(b, "pred", pred_dims), param(b, dt, dims), param(b, dt, dims)
        )

    n = edge_count(dt)
    return [
        CaseSpec("array", build_for((n,), (n,))),
        CaseSpec("scalar-pred", build_for((), (3, 4))),
        CaseSpec("scalar", build_for((), ())),
        CaseSpec("empty", build_for((0, 2), (0, 2))),
    ]


@generates(Opcode.CLAMP)
def clamp(op: Opcode, dt: DType) -> list[CaseSpec]:
    n = edge_count(dt)

    def build_for(bound_dims, dims):
        return lambda b: b.clamp(
            param(b, dt, bound_dims), param(b, dt, dims), param(b, dt, bound_dims)
        )

    return [
        CaseSpec("array", build_for((n,), (n,))),
        CaseSpec("scalar-bounds", build_for((), (n,))),
        CaseSpec("empty", build_for((), (0,))),
    ]


@generates(Opcode.CONVERT)
def convert(op: Opcode, dt: DType) -> list[CaseSpec]:
    dims = (edge_count(dt) + 8,)
    return [
        CaseSpec(f"to-{to.name}", lambda b, to=to: b.convert(param(b, dt, dims), to))
        for to in dtypes.ALL_DTYPES
    ]


@generates(Opcode.BITCAST_CONVERT)
def bitcast_convert(op: Opcode, dt: DType) -> list[CaseSpec]:
    specs = []
    for to in dtypes.ALL_DTYPES:
        if to.is_pred or dt.is_pred:
            continue
        ratio = max(dt.bits, to.bits) // min(dt.bits, to.bits)
        dims = (3, ratio) if to.bits > dt.bits else (edge_count(dt),)
        specs.append(
            CaseSpec(
                f"to-{to.name}",
                lambda b, to=to, dims=dims: b.bitcast_convert(param(b, dt, dims), to),
            )
        )
    return specs


@generates(Opcode.REDUCE_PRECISION)
def reduce_precision(op: Opcode, dt: DType) -> list[CaseSpec]:
    dims = (edge_count(dt) + 12,)
    formats = [(8, 23), (8, 7), (5, 10), (5, 2), (4, 3), (11, 52), (1, 0)]
    return [
        CaseSpec(f"e{e}m{m}", lambda b, e=e, m=m: b.reduce_precision(param(b, dt, dims), e, m))
        for e, m in formats
    ]


@generates(Opcode.MAP)
def map_(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(dims):
        def build(b: Builder):
            x, y = param(b, dt, dims), param(b, dt, dims)
            return b.map([x, y], b.scalar_computation(Opcode.ADD, dt, name=f"add_{dt.name}"))

        return build

    kind = default_kind(Opcode.ADD, dt)
    return [
        CaseSpec("add", build_for((3, 4)), kind=kind),
        CaseSpec("scalar", build_for(()), kind=kind),
        CaseSpec("empty", build_for((0, 2)), kind=kind),
    ]
