"""The one-instruction module a HostFallback step carries, encoded without pickle.

Its entry takes one parameter per array leaf of the instruction's operands (the step's input
slots, in order), rebuilds tuple operands with tuple instructions (a token operand is a fresh
after-all), and returns the instruction's
result, so the runtime passes the slots' host copies as they are and flattens the result into
the output slots. The computations the instruction calls (a while's body, a sort's comparator)
come along, encoded from the module they live in without copying it.
"""

from __future__ import annotations

from hlort.ir.computation import Computation, callees_first
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.module_codec import encode_module
from hlort.ir.opcodes import Opcode
from hlort.shape import Shape


def _rebuild(comp: Computation, shape: Shape, counter: list[int]) -> Instruction:
    if shape.is_tuple:
        parts = [_rebuild(comp, e, counter) for e in shape.elements]
        return comp.add_instruction(Instruction(Opcode.TUPLE, shape, parts))
    if not shape.is_array:  # a token: no slot carries it; a fresh one stands in
        return comp.add_instruction(Instruction(Opcode.AFTER_ALL, shape, ()))
    number = counter[0]
    counter[0] += 1
    return comp.add_instruction(
        Instruction(Opcode.PARAMETER, shape, (), name=f"arg{number}", parameter_number=number)
    )


def host_fallback_module(module: Module, instr: Instruction) -> bytes:
    """``instr`` alone on flattened parameters, as encode_module bytes."""
    wrapper = Computation(f"host_{instr.name}")
    counter = [0]
    operands = [_rebuild(wrapper, o.shape, counter) for o in instr.operands]
    clone = wrapper.add_instruction(instr.clone_with(operands=operands))
    wrapper.set_root(clone)
    single = Module(f"{module.name}_{instr.name}")
    single.computations = [*callees_first(instr.called_computations()), wrapper]
    single.entry = wrapper
    return encode_module(single)


__all__ = ["host_fallback_module"]
