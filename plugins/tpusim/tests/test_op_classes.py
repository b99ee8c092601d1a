"""tpusim's op classes and dispatch come from tables, not from names: every ISA instruction run
outside a vector loop has a registered executor, and the op classes are the op table's."""

from hlort.ir.op_def import Numerics
from hlort.ir.opcodes import Opcode
from hlort_tpusim.compiler.vector import INDEX_MAP_OPS
from hlort_tpusim.executors import EXECUTORS
from hlort_tpusim.isa import OPS, TRANSCENDENTAL_OPS


def test_every_instruction_outside_vector_loops_has_an_executor():
    outside = [name for name, spec in OPS.items() if not spec.in_vloop]
    assert EXECUTORS.missing(outside) == []
    assert set(EXECUTORS.keys()) == set(outside)


def test_transcendental_class_is_the_expensive_elementwise_ops():
    assert {op.value for op in Opcode if op.info.numerics is Numerics.TRANSCENDENTAL} < (
        TRANSCENDENTAL_OPS
    )
    assert {"divide", "remainder"} < TRANSCENDENTAL_OPS
    assert not {"add", "multiply", "map", "maximum"} & TRANSCENDENTAL_OPS


def test_index_maps_are_the_one_operand_index_maps():
    assert INDEX_MAP_OPS == {
        Opcode.BROADCAST,
        Opcode.RESHAPE,
        Opcode.TRANSPOSE,
        Opcode.SLICE,
        Opcode.REVERSE,
    }
