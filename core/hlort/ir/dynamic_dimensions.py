"""Where a bounded dimension's size comes from (XLA's bounded dynamism, ``f32[<=8]``).

``set-dimension-size(x, n), dimensions={d}`` gives dimension ``d`` the size ``n``; ops that keep
their operand's dimensions as they are (elementwise ops, converts, copies) keep it.
:func:`size_source` follows a value back to that set-dimension-size; the interpreter reads its
size there and the dimension-size lowering pass forwards it, so both agree.
"""

from __future__ import annotations

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode

_KEEPS_DIMENSIONS = {Opcode.CONVERT, Opcode.COPY, Opcode.BITCAST_CONVERT}
_MAX_STEPS = 10_000


def size_source(instr: Instruction, d: int) -> Instruction | None:
    """The set-dimension-size that gave ``instr``'s dimension ``d`` its size, or None (the
    dimension has its static size, or comes through an op that is not followed)."""
    node = instr
    for _ in range(_MAX_STEPS):
        if node.opcode is Opcode.SET_DIMENSION_SIZE:
            if tuple(node.attrs["dimensions"]) == (d,):
                return node
            node = node.operands[0]
            continue
        keeps = node.opcode.info.elementwise or node.opcode in _KEEPS_DIMENSIONS
        same = [o for o in node.operands if getattr(o.shape, "dims", None) == node.shape.dims]
        if not keeps or not same:
            return None
        bounded = [o for o in same if (o.shape.dynamic or ())[d : d + 1] == (True,)]
        node = (bounded or same)[0]
    return None
