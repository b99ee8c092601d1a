"""Op cases: set-dimension-size and get-dimension-size (bounded dynamism).

The data of a bounded value is its padded extent (the interpreter keeps it; a backend may pad
to the bound), so the cases return the data and the sizes ``get-dimension-size`` reads: the
size set on that dimension (through an elementwise op), and a static dimension's size.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.builder import Builder
from hlort.dtypes import DType
from hlort.ir.opcodes import Opcode
from hlort.testing.case_helpers import param
from hlort.testing.op_case import CaseSpec, generates


def _sized(b: Builder, dt: DType, size: int):
    x = param(b, dt, (6, 3))
    n = b.constant(np.int32(size))
    return b.op(Opcode.SET_DIMENSION_SIZE, (x, n), dimensions=(0,))


@generates(Opcode.SET_DIMENSION_SIZE)
def set_dimension_size(op: Opcode, dt: DType) -> list[CaseSpec]:
    def keeps_data(b: Builder):
        s = _sized(b, dt, 4)
        return b.tuple([s, b.op(Opcode.GET_DIMENSION_SIZE, (s,), dimensions=(0,))])

    def size_from_a_parameter(b: Builder):
        x = param(b, dt, (5,))
        n = param(b, dtypes.S32)
        s = b.op(Opcode.SET_DIMENSION_SIZE, (x, n), dimensions=(0,))
        return b.op(Opcode.GET_DIMENSION_SIZE, (s,), dimensions=(0,))

    return [
        CaseSpec("keeps-data", keeps_data),
        CaseSpec(
            "runtime-size",
            size_from_a_parameter,
            inputs=lambda rng, shapes: [np.zeros(5, dt.numpy), np.int32(3)],
        ),
    ]


@generates(Opcode.GET_DIMENSION_SIZE)
def get_dimension_size(op: Opcode, dt: DType) -> list[CaseSpec]:
    def through_convert(b: Builder):
        s = b.convert(_sized(b, dt, 2), dtypes.F32)
        return b.tuple(
            [
                b.op(Opcode.GET_DIMENSION_SIZE, (s,), dimensions=(0,)),
                b.op(Opcode.GET_DIMENSION_SIZE, (s,), dimensions=(1,)),
            ]
        )

    def static(b: Builder):
        return b.op(Opcode.GET_DIMENSION_SIZE, (param(b, dt, (7, 0)),), dimensions=(1,))

    if dt not in (dtypes.F32, dtypes.S32, dtypes.PRED):
        return []  # the op does not look at elements: three element types cover it
    return [CaseSpec("through-convert", through_convert), CaseSpec("static", static)]
