"""While and conditional as structured scalar control flow around sub-programs.

``while``: the loop state is copied into carried HBM buffers; each trip runs the condition's
code, ``sld`` loads its pred into a scalar register, the ``While`` node exits on zero, and the
body's code computes the next state, copied back into the carried buffers (through fresh
temporaries when the body permutes state elements, so no copy reads an overwritten buffer).
``conditional``: ``sld`` loads the selector, a ``Switch`` runs one branch's code, which copies
its result into buffers allocated before the switch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, TupleShape
from hlort_tpusim.compiler.hostop import alloc_like
from hlort_tpusim.compiler.lowering_context import Context, Ref, flatten
from hlort_tpusim.isa import Instr
from hlort_tpusim.program import Switch, While

if TYPE_CHECKING:
    from hlort_tpusim.compiler.lowering import Lowering


def supports(instr: Instruction) -> bool:
    def arrays_only(shape) -> bool:
        if isinstance(shape, TupleShape):
            return all(arrays_only(s) for s in shape.elements)
        return isinstance(shape, ArrayShape)

    return arrays_only(instr.shape) and all(arrays_only(o.shape) for o in instr.operands)


def _copy_all(lw: Lowering, dst: list[int], src: list[int]) -> None:
    for d, s in zip(dst, src, strict=True):
        if d != s:
            lw.emit(Instr("dma.copy", {"dst": d, "src": s}))


def lower(lw: Lowering, ctx: Context, instr: Instruction) -> Ref:
    if instr.opcode is Opcode.WHILE:
        return _lower_while(lw, ctx, instr)
    return _lower_conditional(lw, ctx, instr)


def _lower_while(lw: Lowering, ctx: Context, instr: Instruction) -> Ref:

    init = lw.value(ctx, instr.operands[0])
    carried = alloc_like(lw, instr.shape, f"{instr.name} state")
    _copy_all(lw, flatten(carried), flatten(init))
    cond_comp, body_comp = instr.attrs["condition"], instr.attrs["body"]
    cond_nodes: list = []
    saved = lw.nested(cond_nodes)
    pred = lw.computation(Context(cond_comp, [carried], fused=False))
    lw.emit(Instr("sld", {"dst": "s0", "src": pred}))
    body_nodes: list = []
    lw.nested(body_nodes)
    new = flatten(lw.computation(Context(body_comp, [carried], fused=False)))
    targets = flatten(carried)
    bases = {lw.program.base_of(b) for b in targets}
    if any(lw.program.base_of(b) in bases and b != t for b, t in zip(new, targets, strict=True)):
        staged = [lw.new_buffer(lw.buffer_shape(b), "while staging") for b in new]
        _copy_all(lw, staged, new)
        new = staged
    _copy_all(lw, targets, new)
    lw.restore(saved)
    lw.emit(While(cond_nodes, "s0", body_nodes))
    return carried


def _lower_conditional(lw: Lowering, ctx: Context, instr: Instruction) -> Ref:

    selector = instr.operands[0]
    sel = lw.value(ctx, selector)
    args = [lw.value(ctx, o) for o in instr.operands[1:]]
    result = alloc_like(lw, instr.shape, f"{instr.name} result")
    lw.emit(Instr("sld", {"dst": "s1", "src": sel}))
    branches = []
    for comp, arg in zip(instr.attrs["branch_computations"], args, strict=True):
        nodes: list = []
        saved = lw.nested(nodes)
        out = lw.computation(Context(comp, [arg], fused=False))
        _copy_all(lw, flatten(result), flatten(out))
        lw.restore(saved)
        branches.append(nodes)
    lw.emit(Switch("s1", branches, is_pred=selector.shape.dtype.is_pred))
    return result
