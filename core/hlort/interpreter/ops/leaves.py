"""Interpreter: parameter (handled by the evaluator), constant, iota, replica-id, partition-id."""

from __future__ import annotations

import numpy as np

from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode


@evaluates(Opcode.CONSTANT)
def _constant(ev, instr):
    return instr.literal


@evaluates(Opcode.IOTA)
def _iota(ev, instr):
    shape = instr.shape
    dim = instr.attrs["iota_dimension"]
    line = np.arange(shape.dims[dim]).astype(shape.dtype.numpy)
    view = [1] * shape.rank
    view[dim] = shape.dims[dim]
    return np.ascontiguousarray(np.broadcast_to(line.reshape(view), shape.dims))


@evaluates(Opcode.REPLICA_ID)
def _replica_id(ev, instr):
    return np.array(ev.replica_id, dtype=np.uint32)


@evaluates(Opcode.PARTITION_ID)
def _partition_id(ev, instr):
    return np.array(ev.partition_id, dtype=np.uint32)
