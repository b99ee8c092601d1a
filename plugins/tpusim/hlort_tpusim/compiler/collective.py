"""Collectives: one ``ici.collective`` instruction each, moving data over the inter-chip links.

The instruction is cut out into a one-instruction HLO module (as a host op is, so the simulator
has its groups, pairs and reducer) and runs between the chips of the execution: the values
meet at the execution's rendezvous, combine with the semantics every backend shares, and the
time is the ring link model's (``hlort_tpusim.ring_model``). An async start is its collective
(the start's whole tuple is written); a done moves nothing: it is a view of its start's result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.plugin.base.collectives import COLLECTIVE_OPCODES, DONE_OPCODES
from hlort.plugin.base.hlo_text import print_hlo
from hlort_tpusim.compiler.hostop import alloc_like, extract_module
from hlort_tpusim.compiler.lowering_context import Context, Ref, flatten
from hlort_tpusim.isa import Instr
from hlort_tpusim.program import Kernel

if TYPE_CHECKING:
    from hlort_tpusim.compiler.lowering import Lowering


def supports(instr: Instruction) -> bool:
    return instr.opcode in COLLECTIVE_OPCODES


def lower_collective(lw: Lowering, ctx: Context, instr: Instruction) -> Ref:
    if instr.opcode in DONE_OPCODES:
        start = lw.value(ctx, instr.operands[0])
        return start if instr.opcode is Opcode.ALL_REDUCE_DONE else start[1]
    operands = [lw.value(ctx, o) for o in instr.operands]
    module = extract_module(instr, f"collective_{instr.name}".replace(".", "_").replace("-", "_"))
    index = lw.add_module(module, print_hlo(module))
    result = alloc_like(lw, instr.shape, instr.name)
    kernel = Kernel(lw.kernel_name(instr), f"{instr.opcode.value} {instr.shape} (inter-chip links)")
    kernel.body.append(
        Instr(
            "ici.collective",
            {
                "opcode": instr.opcode.value,
                "hlo": index,
                "ins": [b for ref in operands for b in flatten(ref)],
                "outs": flatten(result),
            },
        )
    )
    lw.emit(kernel)
    return result
