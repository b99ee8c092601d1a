"""The op table is the one definition of an op: every opcode has its shape rule, interpreter
function, conformance cases and docs, and the tables derived from it say what it says."""

from pathlib import Path

from hlort.interpreter.registry import OP_FUNCTIONS
from hlort.ir import op_table_doc
from hlort.ir.op_def import FusionRole, Numerics
from hlort.ir.opcodes import Opcode
from hlort.ir.shape_inference import SHAPE_RULES
from hlort.testing.op_case import EXEMPT as NO_CASES
from hlort.testing.op_case import GENERATORS

OPS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "ops.md"

NO_INTERPRETER_FUNCTION = {
    Opcode.PARAMETER: "the evaluator binds parameters to the call's arguments itself",
}


def test_every_opcode_has_a_shape_rule():
    assert SHAPE_RULES.missing(Opcode) == []


def test_every_opcode_has_an_interpreter_function_or_a_reason():
    assert OP_FUNCTIONS.missing(Opcode) == list(NO_INTERPRETER_FUNCTION)


def test_every_opcode_has_conformance_cases_or_a_reason():
    assert GENERATORS.missing(Opcode) == list(NO_CASES)


def test_docs_op_table_is_current():
    page = OPS_PAGE.read_text()
    assert op_table_doc.render(page) == page, (
        "docs/ops.md's op table is stale: run python -m hlort.ir.op_table_doc docs/ops.md"
    )


def test_every_opcode_has_a_docs_row_and_a_section():
    page = OPS_PAGE.read_text()
    table, sections = page.split(op_table_doc.END)
    for op in Opcode:
        assert f"| `{op.value}` |" in table, op
        assert f"`{op.value}`" in sections, f"{op.value} has no entry in docs/ops.md's sections"


def test_transcendental_is_the_numerics_class():
    for op in Opcode:
        assert op.info.transcendental == (op.info.numerics is Numerics.TRANSCENDENTAL)
        if op.info.transcendental:
            assert op.info.expensive, op


def test_roles_agree_with_flags():
    for op in Opcode:
        d = op.info
        if d.elementwise and op is not Opcode.MAP:
            assert d.fusion is FusionRole.ELEMENTWISE, op
        if d.types is not None:
            assert d.elementwise, op
        for key in d.called:
            assert d.attr(key) is not None, (op, key)
            assert d.attr(key).type in ("comp", "comps", "comp_or_comps"), (op, key)
