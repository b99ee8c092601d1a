"""The verifier rejects malformed modules with messages naming the instruction."""

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Computation, Instruction, Module, Opcode, verify_module
from hlort.ir.computation import make_parameters


def _module_with(comp: Computation) -> Module:
    m = Module("m")
    m.add_computation(comp, entry=True)
    return m


def _expect_invalid(module, *fragments):
    with pytest.raises(HlortError) as err:
        verify_module(module)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    for f in fragments:
        assert f in str(err.value), str(err.value)


def test_good_module_passes():
    b = Builder("ok")
    b.iota(shape.array("f32", [3, 2]), 1)
    verify_module(b.build())


def test_wrong_declared_shape_names_instruction():
    comp = Computation("c")
    bad = Instruction(
        Opcode.IOTA, shape.array("f32", [3]), (), {"iota_dimension": 1}, name="my_iota"
    )
    comp.add_instruction(bad)
    comp.set_root(bad)
    _expect_invalid(_module_with(comp), "my_iota", "iota_dimension")


def test_constant_literal_mismatch():
    comp = Computation("c")
    k = comp.add_instruction(
        Instruction(
            Opcode.CONSTANT, shape.array("f32", [2]), (), literal=np.zeros(3, np.float32), name="k"
        )
    )
    comp.set_root(k)
    _expect_invalid(_module_with(comp), "k", "literal")


def test_missing_root():
    comp = Computation("c")
    make_parameters(comp, [shape.scalar("f32")])
    _expect_invalid(_module_with(comp), "no ROOT")


def test_parameter_numbers_must_be_dense():
    comp = Computation("c")
    p = comp.add_instruction(
        Instruction(Opcode.PARAMETER, shape.scalar("f32"), parameter_number=1, name="p")
    )
    comp.set_root(p)
    _expect_invalid(_module_with(comp), "numbered [1]")


def test_cycle_is_detected():
    comp = Computation("c")
    (p,) = make_parameters(comp, [shape.scalar("f32")])
    a = comp.add_instruction(Instruction(Opcode.NEGATE, shape.scalar("f32"), (p,), name="a"))
    b = comp.add_instruction(Instruction(Opcode.NEGATE, shape.scalar("f32"), (a,), name="b"))
    a.operands = [b]
    comp.set_root(b)
    _expect_invalid(_module_with(comp), "cycle")


def test_operand_from_other_computation():
    other = Computation("other")
    (q,) = make_parameters(other, [shape.scalar("f32")], prefix="q")
    other.set_root(q)
    comp = Computation("c")
    n = comp.add_instruction(Instruction(Opcode.NEGATE, shape.scalar("f32"), (q,), name="n"))
    comp.set_root(n)
    m = _module_with(comp)
    m.add_computation(other)
    _expect_invalid(m, "n", "same computation")


def test_duplicate_names():
    comp = Computation("c")
    (p,) = make_parameters(comp, [shape.scalar("f32")])
    comp.set_root(p)
    m = _module_with(comp)
    other = Computation("d")
    (q,) = make_parameters(other, [shape.scalar("f32")])
    other.set_root(q)
    m.computations.append(other)  # bypass add_computation's renaming on purpose
    other.parent = m
    _expect_invalid(m, "p0", "unique")


def test_no_entry():
    _expect_invalid(Module("empty"), "no entry")


def _iota_with(attrs: dict) -> Module:
    comp = Computation("c")
    instr = comp.add_instruction(
        Instruction(Opcode.IOTA, shape.array("f32", [3]), (), attrs, name="my_iota")
    )
    comp.set_root(instr)
    return _module_with(comp)


def test_unknown_attribute_names_op_and_key():
    module = _iota_with({"iota_dimension": 0, "iota_dimnesion": 0})
    _expect_invalid(
        module, "iota my_iota", "unknown attribute 'iota_dimnesion'", "takes iota_dimension"
    )


def test_attribute_of_another_op_is_unknown():
    module = _iota_with({"iota_dimension": 0, "dimensions": (0,)})
    _expect_invalid(module, "iota my_iota", "unknown attribute 'dimensions'")


@pytest.mark.parametrize("value", ["0", 0.0, True, None, (0,)])
def test_ill_typed_attribute_names_op_key_and_type(value):
    module = _iota_with({"iota_dimension": value})
    _expect_invalid(
        module,
        "iota my_iota",
        "attribute 'iota_dimension' must be an integer",
        type(value).__name__,
    )


def test_ill_typed_group_and_enum_attributes():
    b = Builder("m")
    x = b.parameter(shape.array("f32", [2, 2]))
    d = b.dot(x, x)
    c = b.compare(x, x, "LT")
    module = b.build(b.tuple([d, c]))
    verify_module(module)
    good = d.attrs["dot_dimension_numbers"]
    d.attrs["dot_dimension_numbers"] = {"lhs_contracting_dims": (1,)}
    _expect_invalid(module, d.name, "'dot_dimension_numbers' must be a DotDimensionNumbers")
    d.attrs["dot_dimension_numbers"] = good
    verify_module(module)
    c.attrs["direction"] = "SMALLER"
    _expect_invalid(module, c.name, "'direction' must be a ComparisonDirection", "'SMALLER'")
    c.attrs["direction"] = "LT"  # the enum's spelling is accepted, as the rules and printer do
    verify_module(module)


def test_every_schema_type_has_a_check_and_every_attr_a_known_type():
    from hlort.ir.op_def import ATTR_TYPES, GROUPS

    for op in Opcode:
        for a in op.info.attrs:
            assert a.type in ATTR_TYPES, (op, a)
            if "." in a.key:
                group, field = a.key.split(".", 1)
                assert field in GROUPS[group].__dataclass_fields__, (op, a)
