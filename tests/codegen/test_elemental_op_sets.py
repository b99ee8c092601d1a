"""The neutral emitter's per-op routine tables cover exactly the ops the op table (OpDef) puts
in their class, so adding a transcendental op to ``hlort.ir.opcodes`` fails here until the
emitter binds a routine for it."""

from __future__ import annotations

from hlort.codegen.llvm import elemental
from hlort.ir.opcodes import Opcode


def test_transcendental_routines_are_the_op_tables_one_operand_transcendentals():
    unary = {op for op in Opcode if op.info.transcendental and op.info.arity == 1}
    assert set(elemental._TRANSCENDENTAL) == unary
    assert unary, "the op table marks no one-operand op as transcendental"
