"""Case generators for control flow and structure: while, conditional, call, tuples, fusion,
custom calls, tokens, rng-bit-generator and the device-identity ops.

Tuple results come back flattened (one output per leaf) and tuple parameters take their leaves
as separate arguments, which is the executable boundary every backend must get right.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.attributes import FusionKind
from hlort.ir.opcodes import Opcode
from hlort.shape import TupleShape, array, scalar
from hlort.testing.case_helpers import fixed_tail, param
from hlort.testing.op_case import CaseSpec, generates
from hlort.testing.values import mixed

S32, U32, U64 = dtypes.S32, dtypes.U32, dtypes.U64


@generates(Opcode.WHILE)
def while_(op: Opcode, dt: DType) -> list[CaseSpec]:
    """Adds x to an accumulator five times: (i, acc, x) -> (i + 1, acc + x, x) while i < 5."""

    def build(b: Builder):
        state = TupleShape((scalar(S32), array(dt, (3,)), array(dt, (3,))))
        cond = b.sub("cond")
        s = cond.parameter(state, "s")
        limit = cond.constant(np.int32(5), dtype=S32)
        cond_comp = cond.finish(cond.compare(cond.get_tuple_element(s, 0), limit, "LT"))
        body = b.sub("body")
        s = body.parameter(state, "s")
        i, acc, x = (body.get_tuple_element(s, k) for k in range(3))
        one = body.constant(np.int32(1), dtype=S32)
        body_comp = body.finish(body.tuple([body.add(i, one), body.add(acc, x), x]))
        init = b.tuple([b.constant(np.int32(0), dtype=S32), param(b, dt, (3,)), param(b, dt, (3,))])
        loop = b.while_loop(cond_comp, body_comp, init)
        return b.get_tuple_element(loop, 1)

    return [CaseSpec("sum5", build, kind="accumulate")]


@generates(Opcode.CONDITIONAL)
def conditional(op: Opcode, dt: DType) -> list[CaseSpec]:
    def branches(b: Builder, count: int):
        out = []
        for k in range(count):
            sub = b.sub(f"branch{k}")
            x = sub.parameter(array(dt, (2, 3)), "x")
            root = [x, sub.reverse(x, [1]), sub.transpose(x, [1, 0])][k]
            root = sub.reshape(root, [2, 3]) if k == 2 else root
            out.append(sub.finish(root))
        return out

    def by_pred(b: Builder):
        selector = param(b, "pred")
        x = param(b, dt, (2, 3))
        return b.conditional(selector, branches(b, 2), [x, x])

    def by_index(b: Builder):
        selector = param(b, S32)
        x = param(b, dt, (2, 3))
        return b.conditional(selector, branches(b, 3), [x, x, x])

    def pred_inputs(value: bool):
        def make(rng, shapes):
            return [np.array(value), mixed(dt, shapes[1].dims, rng)]

        return make

    def index_inputs(value: int):
        def make(rng, shapes):
            return [np.array(value, np.int32), mixed(dt, shapes[1].dims, rng)]

        return make

    return [
        CaseSpec("pred-true", by_pred, inputs=pred_inputs(True)),
        CaseSpec("pred-false", by_pred, inputs=pred_inputs(False)),
        CaseSpec("index-1", by_index, inputs=index_inputs(1)),
        CaseSpec("index-out-of-range", by_index, inputs=index_inputs(7)),
    ]


@generates(Opcode.CALL)
def call(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        sub = b.sub("swap")
        x, y = sub.parameter(array(dt, (3,)), "x"), sub.parameter(array(dt, (2,)), "y")
        comp = sub.finish(sub.concatenate([sub.reverse(y, [0]), x], 0))
        return b.call(comp, [param(b, dt, (3,)), param(b, dt, (2,))])

    return [CaseSpec("concat", build)]


@generates(Opcode.TUPLE)
def tuple_(op: Opcode, dt: DType) -> list[CaseSpec]:
    def flat(b: Builder):
        return b.tuple([param(b, dt, (3,)), param(b, S32, (2,)), param(b, dt)])

    def nested(b: Builder):
        x, y = param(b, dt, (2, 2)), param(b, dt, (0,))
        return b.tuple([b.tuple([x]), b.tuple([y, x])])

    return [CaseSpec("three", flat), CaseSpec("nested", nested)]


@generates(Opcode.GET_TUPLE_ELEMENT)
def get_tuple_element(op: Opcode, dt: DType) -> list[CaseSpec]:
    def from_parameter(b: Builder):
        t = b.parameter(TupleShape((array(dt, (3,)), array(S32, (2,)), array(dt, (2, 2)))))
        return b.tuple([b.get_tuple_element(t, 2), b.get_tuple_element(t, 0)])

    return [CaseSpec("tuple-parameter", from_parameter)]


@generates(Opcode.OPTIMIZATION_BARRIER)
def optimization_barrier(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        t = b.optimization_barrier(b.tuple([param(b, dt, (3,)), param(b, S32, (2,))]))
        return b.get_tuple_element(t, 0)

    return [CaseSpec("tuple", build)]


@generates(Opcode.AFTER_ALL)
def after_all(op: Opcode, dt: DType) -> list[CaseSpec]:
    if dt is not dtypes.F32:
        return []

    def build(b: Builder):
        token = b.after_all([b.after_all(), b.after_all()])
        kept = b.optimization_barrier(b.tuple([param(b, dt, (3,)), token]))
        return b.get_tuple_element(kept, 0)

    return [CaseSpec("tokens", build)]


@generates(Opcode.CUSTOM_CALL)
def custom_call(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        x = param(b, dt, (2, 3))
        return b.custom_call("Sharding", [x], x.shape, backend_config=None)

    return [CaseSpec("sharding-identity", build)]


@generates(Opcode.FUSION)
def fusion(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        sub = b.sub(f"fused_{dt.name}")
        p0, p1 = sub.parameter(array(dt, (3, 4)), "p0"), sub.parameter(array(dt, (3, 4)), "p1")
        comp = b._comp(sub.finish(sub.multiply(sub.add(p0, p1), p0)))
        x, y = param(b, dt, (3, 4)), param(b, dt, (3, 4))
        return b.op(Opcode.FUSION, (x, y), kind=FusionKind.LOOP, calls=comp)

    return [CaseSpec("loop", build, kind="accumulate")]


@generates(Opcode.RNG_BIT_GENERATOR)
def rng_bit_generator(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build_for(state_size: int, algorithm: str):
        return lambda b: b.rng_bit_generator(
            param(b, U64, (state_size,)), array(dt, (4, 5)), algorithm
        )

    seeds = np.array([[0x0123456789ABCDEF, 0xFFFFFFFFFFFFFFFF, 7]], np.uint64)
    return [
        CaseSpec("three-fry", build_for(2, "rng_three_fry"), inputs=fixed_tail(seeds[0, :2])),
        CaseSpec("philox", build_for(3, "rng_philox"), inputs=fixed_tail(seeds[0])),
        CaseSpec("default", build_for(2, "rng_default"), inputs=fixed_tail(seeds[0, 1:])),
    ]


@generates(Opcode.REPLICA_ID, Opcode.PARTITION_ID)
def device_identity(op: Opcode, dt: DType) -> list[CaseSpec]:
    if dt is not U32:
        return []
    return [CaseSpec("single", lambda b: b.op(op, ()))]
