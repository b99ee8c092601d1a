"""Interpreter: set-dimension-size and get-dimension-size, on values padded to their bounds.

A bounded dimension's value is held at its bound (as a backend that pads to the bound holds
it); ``set-dimension-size`` keeps the data. ``get-dimension-size`` of dimension ``d`` follows
its operand back (hlort.ir.dynamic_dimensions.size_source) to the ``set-dimension-size`` of
``d`` and returns that size, or the static size when there is none (a bounded parameter is
full: NumPy arguments have no smaller size to give). Other ops compute on the whole padded extent.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import InvalidArgument
from hlort.interpreter.registry import evaluates
from hlort.ir.dynamic_dimensions import size_source
from hlort.ir.opcodes import Opcode


@evaluates(Opcode.SET_DIMENSION_SIZE)
def _set_dimension_size(ev, instr, x, size):
    (d,) = instr.attrs["dimensions"]
    n = int(np.asarray(size).reshape(()))
    if not 0 <= n <= x.shape[d]:
        raise InvalidArgument(
            f"{instr.name}: size {n} of dimension {d} is outside [0, {x.shape[d]}] (the bound)"
        )
    return x


@evaluates(Opcode.GET_DIMENSION_SIZE)
def _get_dimension_size(ev, instr, x):
    (d,) = instr.attrs["dimensions"]
    source = size_source(instr.operands[0], d)
    if source is None:
        return np.array(x.shape[d], np.int32)
    return np.asarray(ev.value_of(source.operands[1]), np.int32).reshape(())
