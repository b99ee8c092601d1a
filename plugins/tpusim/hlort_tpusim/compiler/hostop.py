"""The host-assisted path: one ``hostop`` per op that has no unit mapping on tpusim.

The instruction is cut out into a one-instruction HLO module (its called computations copied
along), stored in the program as HLO text, and executed by the simulator with the reference
interpreter on the operands' HBM contents. The timing model charges it on the scalar unit per
element plus its HBM traffic, and the profile lists it under HOSTOP, so a vendor reading a
profile sees exactly which ops did not run on the matrix or vector units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.module import Module
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.hlo_text import print_hlo
from hlort.shape import ArrayShape, Shape, TupleShape
from hlort_tpusim.compiler.lowering_context import Context, Ref, flatten
from hlort_tpusim.isa import Instr
from hlort_tpusim.program import Kernel

if TYPE_CHECKING:
    from hlort_tpusim.compiler.lowering import Lowering


def _reachable(roots: list[Computation]) -> list[Computation]:
    order: list[Computation] = []
    seen: set[Computation] = set()

    def visit(comp: Computation) -> None:
        if comp in seen:
            return
        seen.add(comp)
        for callee in comp.called_computations():
            visit(callee)
        order.append(comp)

    for comp in roots:
        visit(comp)
    return order


def _copy_computation(comp: Computation, comp_map: dict[Computation, Computation]) -> Computation:
    copy = Computation(comp.name)
    copy.is_fusion_computation = comp.is_fusion_computation
    instr_map: dict[Instruction, Instruction] = {}
    for instr in comp.post_order():
        attrs = {}
        for key, value in instr.attrs.items():
            if isinstance(value, Computation):
                value = comp_map[value]
            elif isinstance(value, (list, tuple)) and value and isinstance(value[0], Computation):
                value = tuple(comp_map[v] for v in value)
            attrs[key] = value
        clone = instr.clone_with(operands=[instr_map[o] for o in instr.operands], attrs=attrs)
        instr_map[instr] = clone
        copy.add_instruction(clone)
    copy.set_root(instr_map[comp.root])
    return copy


def extract_module(instr: Instruction, name: str = "hostop") -> Module:
    """A module whose entry computes ``instr`` from parameters shaped like its operands."""
    module = Module(name)
    comp_map: dict[Computation, Computation] = {}
    for comp in _reachable(instr.called_computations()):
        copy = _copy_computation(comp, comp_map)
        comp_map[comp] = copy
        module.add_computation(copy)
    entry = Computation(f"{name}_entry")
    params = [
        entry.add_instruction(
            Instruction(Opcode.PARAMETER, o.shape, (), name=f"arg{i}", parameter_number=i)
        )
        for i, o in enumerate(instr.operands)
    ]
    attrs = {}
    for key, value in instr.attrs.items():
        if isinstance(value, Computation):
            value = comp_map[value]
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], Computation):
            value = tuple(comp_map[v] for v in value)
        attrs[key] = value
    clone = instr.clone_with(operands=params, attrs=attrs)
    entry.add_instruction(clone)
    entry.set_root(clone)
    module.add_computation(entry, entry=True)
    module.config = (
        dict(instr.parent.parent.config) if instr.parent and instr.parent.parent else module.config
    )
    return module


def computation_module(comp: Computation, name: str) -> Module:
    """A module whose entry is a copy of ``comp`` (a reducer, a loop condition...)."""
    module = Module(name.replace(".", "_"))
    comp_map: dict[Computation, Computation] = {}
    for c in _reachable([comp]):
        copy = _copy_computation(c, comp_map)
        comp_map[c] = copy
        module.add_computation(copy, entry=c is comp)
    return module


def alloc_like(lw: Lowering, shape: Shape, label: str) -> Ref:
    if isinstance(shape, TupleShape):
        return tuple(alloc_like(lw, s, label) for s in shape.elements)
    if isinstance(shape, ArrayShape):
        return lw.new_buffer(shape, label)
    return "token"


def lower_hostop(lw: Lowering, ctx: Context, instr: Instruction) -> Ref:

    if instr.opcode is Opcode.CUSTOM_CALL:
        from hlort.ir.custom_calls import evaluator_for

        evaluator_for(instr.attrs.get("custom_call_target", ""))  # UNIMPLEMENTED if unknown
    operands = [lw.value(ctx, o) for o in instr.operands]
    module = extract_module(instr, f"hostop_{instr.name}".replace(".", "_"))
    index = lw.add_module(module, print_hlo(module))
    result = alloc_like(lw, instr.shape, instr.name)
    ins = [b for ref in operands for b in flatten(ref)]
    kernel = Kernel(lw.kernel_name(instr), f"{instr.opcode.value} {instr.shape} (host-assisted)")
    kernel.body.append(
        Instr(
            "hostop",
            {"opcode": instr.opcode.value, "hlo": index, "ins": ins, "outs": flatten(result)},
        )
    )
    lw.emit(kernel)
    return result
