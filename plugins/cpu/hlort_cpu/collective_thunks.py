"""Collectives as host steps of the thunk program, on shared host memory.

All virtual cpu devices live in one process, so a collective is a runtime operation between
compiled kernels, as XLA:CPU's in-process collectives are: the device's thread hands its operand
arrays (no copy: the other devices read them in place) to the execution's rendezvous
(``hlort.plugin.base.launch_context``), waits for its group, and combines the group's values
with the semantics every backend shares (``hlort.plugin.base.collectives``), so the results
agree with the interpreter bit for bit. It never runs the instruction on the interpreter: it is
counted as compiled, not as a FALLBACK. A reducer computation (``to_apply``) is applied to whole
arrays at once.

Outside a launch (``execute_host``) and in a one-device execution the program is one copy:
every group is that copy alone. The step counts as the op's name plus ``(host collective)``.
"""

from __future__ import annotations

from hlort.ir.instruction import Instruction
from hlort.plugin.base.collectives import COLLECTIVE_OPCODES, collective_result
from hlort.plugin.base.launch_context import LaunchContext
from hlort.plugin.options import DEFAULT_EXECUTE_OPTIONS
from hlort_cpu.device_run import current

ONE_COPY = LaunchContext(0, 0, 0, DEFAULT_EXECUTE_OPTIONS)


class CollectiveThunk:
    """One collective (or async start / done) on the device whose run the thread is in."""

    def __init__(self, instr: Instruction, ins: list[int], out: int, evaluator):
        self.instr, self.ins, self.out, self.evaluator = instr, ins, out, evaluator
        self.label = f"{instr.opcode.value} (host collective)"

    def __call__(self, env) -> None:
        ctx = current().context
        operands = [env[i] for i in self.ins]
        env[self.out] = collective_result(
            self.instr, operands, ctx if ctx is not None else ONE_COPY, self.evaluator
        )


def is_collective(instr: Instruction) -> bool:
    return instr.opcode in COLLECTIVE_OPCODES
