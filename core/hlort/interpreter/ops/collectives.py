"""Interpreter: the collectives and their async start/done pairs.

The evaluator's ``peers`` (:class:`hlort.interpreter.collective_semantics.Peers`) are the other
copies of the program; an evaluator without them runs one copy (replica 0, partition 0), where
a group or pair naming another copy is INVALID_ARGUMENT from the group check (the copy counts
come from the compile; run such a program on N devices with ``Executable.execute``).
"""

from __future__ import annotations

from hlort.interpreter.collective_semantics import SINGLE_COPY, done_value, run_collective
from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode


@evaluates(
    Opcode.ALL_REDUCE,
    Opcode.ALL_GATHER,
    Opcode.REDUCE_SCATTER,
    Opcode.ALL_TO_ALL,
    Opcode.COLLECTIVE_PERMUTE,
    Opcode.COLLECTIVE_BROADCAST,
    Opcode.ALL_REDUCE_START,
    Opcode.ALL_GATHER_START,
    Opcode.COLLECTIVE_PERMUTE_START,
)
def _collective(ev, instr, *operands):
    return run_collective(ev, instr, operands, ev.peers or SINGLE_COPY)


@evaluates(Opcode.ALL_REDUCE_DONE, Opcode.ALL_GATHER_DONE, Opcode.COLLECTIVE_PERMUTE_DONE)
def _done(ev, instr, start):
    return done_value(instr, start)
