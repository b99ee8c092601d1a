"""Case generators for the collectives and their async pairs, as one copy of the program runs
them (one replica, one partition: every group is ``{0}``).

These check that a backend compiles and runs each collective's one-copy form (the identity of
all-reduce, all-gather, reduce-scatter, all-to-all and broadcast; a permute to itself; the
start/done pairs). The many-device semantics are checked by tests/collectives, which run every
op on 2, 4 and 8 devices against NumPy.
"""

from __future__ import annotations

from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.opcodes import Opcode
from hlort.shape import TupleShape
from hlort.testing.case_helpers import param, reducer
from hlort.testing.op_case import CaseSpec, generates

_DIMS = (2, 3)


def _reducer_op(dt: DType) -> Opcode:
    return Opcode.OR if dt.is_pred else Opcode.ADD


@generates(Opcode.ALL_REDUCE, Opcode.REDUCE_SCATTER, Opcode.ALL_REDUCE_START)
def reducing(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        x = param(b, dt, _DIMS)
        extra = {"dimensions": (0,)} if op is Opcode.REDUCE_SCATTER else {}
        comp = reducer(b, _reducer_op(dt), dt)
        out = b.op(op, [x], replica_groups=((0,),), to_apply=comp, **extra)
        if op is Opcode.ALL_REDUCE_START:
            out = b.op(Opcode.ALL_REDUCE_DONE, [out])
        return out

    return [CaseSpec("one-copy", build, kind="bits")]


@generates(Opcode.ALL_REDUCE_DONE, Opcode.ALL_GATHER_DONE, Opcode.COLLECTIVE_PERMUTE_DONE)
def done(op: Opcode, dt: DType) -> list[CaseSpec]:
    start = {
        Opcode.ALL_REDUCE_DONE: Opcode.ALL_REDUCE_START,
        Opcode.ALL_GATHER_DONE: Opcode.ALL_GATHER_START,
        Opcode.COLLECTIVE_PERMUTE_DONE: Opcode.COLLECTIVE_PERMUTE_START,
    }[op]
    return [CaseSpec(c.variant, c.build, kind=c.kind) for c in _GEN[start](start, dt)]


@generates(Opcode.ALL_GATHER, Opcode.ALL_GATHER_START)
def gathering(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        x = param(b, dt, _DIMS)
        shape = None
        if op is Opcode.ALL_GATHER_START:
            shape = TupleShape((x.shape, x.shape))
        out = b.op(op, [x], shape, replica_groups=((0,),), dimensions=(1,))
        if op is Opcode.ALL_GATHER_START:
            out = b.op(Opcode.ALL_GATHER_DONE, [out])
        return out

    return [CaseSpec("one-copy", build, kind="bits")]


@generates(Opcode.ALL_TO_ALL, Opcode.COLLECTIVE_BROADCAST)
def moving(op: Opcode, dt: DType) -> list[CaseSpec]:
    def build(b: Builder):
        x = param(b, dt, _DIMS)
        extra = {"dimensions": (0,)} if op is Opcode.ALL_TO_ALL else {}
        return b.op(op, [x], replica_groups=((0,),), **extra)

    return [CaseSpec("one-copy", build, kind="bits")]


@generates(Opcode.COLLECTIVE_PERMUTE, Opcode.COLLECTIVE_PERMUTE_START)
def permuting(op: Opcode, dt: DType) -> list[CaseSpec]:
    def to_self(b: Builder):
        out = b.op(op, [param(b, dt, _DIMS)], source_target_pairs=((0, 0),))
        if op is Opcode.COLLECTIVE_PERMUTE_START:
            out = b.op(Opcode.COLLECTIVE_PERMUTE_DONE, [out])
        return out

    def no_pairs(b: Builder):  # nobody sends: zeros
        out = b.op(op, [param(b, dt, _DIMS)], source_target_pairs=())
        if op is Opcode.COLLECTIVE_PERMUTE_START:
            out = b.op(Opcode.COLLECTIVE_PERMUTE_DONE, [out])
        return out

    return [CaseSpec("to-self", to_self, kind="bits"), CaseSpec("no-pairs", no_pairs, kind="bits")]


_GEN = {
    Opcode.ALL_REDUCE_START: reducing,
    Opcode.ALL_GATHER_START: gathering,
    Opcode.COLLECTIVE_PERMUTE_START: permuting,
}
