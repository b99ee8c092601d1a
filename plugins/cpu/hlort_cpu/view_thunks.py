"""Native thunks for ops that compute nothing: they hand back a view, an alias or a constant.

- bitcast-convert between element types of different widths: the operand's bytes seen as the
  other type (a view when the operand is contiguous; a narrower type adds a trailing dimension
  of the width ratio, a wider one consumes it), as XLA's bitcast is free in memory;
- optimization-barrier: its operand, unchanged (the barrier only constrains passes);
- after-all: a new token;
- replica-id, partition-id: the launch's replica and partition as u32 scalars.

Equal-width bitcast-converts compile as kernels (elementwise, fusible); these views are what is
left. Their results may alias their operands, so the program's arena never holds an operand of
these (arena.py) and an output that aliases an input is copied for the caller.
"""

from __future__ import annotations

import numpy as np

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import Token
from hlort_cpu.device_run import current


class BitcastViewThunk:
    label = "bitcast-convert (view)"

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        self.src, self.out = ins[0], out
        self.dtype = np.dtype(instr.shape.dtype.numpy)
        self.dims = tuple(instr.shape.dims)

    def __call__(self, env) -> None:
        x = env[self.src]
        if not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        env[self.out] = x.reshape(-1).view(self.dtype).reshape(self.dims)


class AliasThunk:
    label = "opt-barrier (alias)"

    def __init__(self, ins: list[int], out: int):
        self.src, self.out = ins[0], out

    def __call__(self, env) -> None:
        env[self.out] = env[self.src]


class TokenThunk:
    label = "after-all (token)"

    def __init__(self, out: int):
        self.out = out

    def __call__(self, env) -> None:
        env[self.out] = Token()


class LaunchIdThunk:
    """replica-id / partition-id: the calling thread's device run's (device_run.py), so the
    devices running one program at the same time each read their own."""

    def __init__(self, op: Opcode, out: int):
        self.attr = "replica" if op is Opcode.REPLICA_ID else "partition"
        self.label = op.value
        self.out = out

    def __call__(self, env) -> None:
        env[self.out] = np.array(getattr(current(), self.attr), dtype=np.uint32)


VIEW_OPS = frozenset(
    {
        Opcode.BITCAST_CONVERT,
        Opcode.OPTIMIZATION_BARRIER,
        Opcode.AFTER_ALL,
        Opcode.REPLICA_ID,
        Opcode.PARTITION_ID,
    }
)


def view_thunk(instr: Instruction, ins: list[int], out: int):
    """The thunk for ``instr`` (an op in VIEW_OPS), or None when it needs another path."""
    op = instr.opcode
    if op is Opcode.BITCAST_CONVERT:
        if not instr.shape.is_array or not instr.operands[0].shape.is_array:
            return None
        return BitcastViewThunk(instr, ins, out)
    if op is Opcode.OPTIMIZATION_BARRIER:
        return AliasThunk(ins, out)
    if op is Opcode.AFTER_ALL:
        return TokenThunk(out)
    return LaunchIdThunk(op, out)
