"""The template's compiler: an optimized HLO module in, a :class:`Program` out.

A real backend lowers each instruction to its hardware (LLVM IR, PTX, a command list). The
template "lowers" each instruction of the entry computation to a :class:`Step`: which kernel
to run, which value slots it reads and which it writes, in an order where every operand is
computed first. Its kernels are the reference interpreter's functions, so results match
``hlort.evaluate`` exactly; replace ``kernel_for`` with your own kernels one op at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hlort.errors import Unimplemented
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.collectives import COLLECTIVE_OPCODES
from hlort.plugin.base.reference_fallback import reference_function

Kernel = Callable[..., object]


def kernel_for(instr: Instruction) -> Kernel:
    """The kernel that runs ``instr``; UNIMPLEMENTED (naming the op) when there is none."""
    kernel = reference_function(instr)  # UNIMPLEMENTED for a custom call with an unknown target
    if kernel is None:
        raise Unimplemented(
            f"the template backend has no kernel for {instr.opcode.value} ({instr.name})"
        )
    return kernel


@dataclass(frozen=True)
class Step:
    """Run ``kernel`` on ``instruction`` with the values in slots ``operands``; store in
    slot ``output``. A ``collective`` step talks to the other devices of the execution: the
    launch runs it through :func:`hlort.plugin.base.collectives.collective_result`."""

    instruction: Instruction
    kernel: Kernel
    operands: tuple[int, ...]
    output: int
    collective: bool = False


@dataclass(frozen=True)
class Program:
    """The executable form: the steps in order, and where parameters go and the result is."""

    steps: tuple[Step, ...]
    parameter_slots: tuple[int, ...]  # slot of entry parameter i
    result_slot: int
    slot_count: int

    def listing(self) -> str:
        """Human-readable program (``hlort compile --dump-dir`` writes it as program.txt)."""
        lines = [f"params -> slots {list(self.parameter_slots)}"]
        for step in self.steps:
            args = ", ".join(f"%{i}" for i in step.operands)
            kind = "  [collective]" if step.collective else ""
            lines.append(
                f"%{step.output} = {step.instruction.opcode.value}({args})"
                f"  # {step.instruction.name}: {step.instruction.shape}{kind}"
            )
        lines.append(f"result: %{self.result_slot}")
        return "\n".join(lines) + "\n"


def compile_module(module: Module) -> Program:
    """Schedule the entry computation. Nested computations (reducers, loop bodies) are run
    by the kernels of the instructions that call them."""
    entry = module.entry
    order = entry.execution_order()  # operands before users; includes unused side effects
    slots = {instr: k for k, instr in enumerate(order)}
    params: dict[int, int] = {}
    steps = []
    for instr in order:
        if instr.opcode is Opcode.PARAMETER:
            params[instr.parameter_number] = slots[instr]
            continue
        operands = tuple(slots[o] for o in instr.operands)
        collective = instr.opcode in COLLECTIVE_OPCODES
        steps.append(Step(instr, kernel_for(instr), operands, slots[instr], collective))
    for comp in module.computations:  # check nested computations' ops now, not at run time
        if comp is not entry:
            for instr in comp.instructions:
                if instr.opcode is not Opcode.PARAMETER:
                    kernel_for(instr)
    parameter_slots = tuple(params[i] for i in range(len(params)))
    return Program(tuple(steps), parameter_slots, slots[entry.root], len(order))
