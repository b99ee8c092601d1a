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
    bad = Instruction(Opcode.IOTA, shape.array("f32", [3]), (), {"iota_dimension": 1},
                      name="my_iota")
    comp.add_instruction(bad)
    comp.set_root(bad)
    _expect_invalid(_module_with(comp), "my_iota", "iota_dimension")


def test_constant_literal_mismatch():
    comp = Computation("c")
    k = comp.add_instruction(Instruction(Opcode.CONSTANT, shape.array("f32", [2]), (),
                                         literal=np.zeros(3, np.float32), name="k"))
    comp.set_root(k)
    _expect_invalid(_module_with(comp), "k", "literal")


def test_missing_root():
    comp = Computation("c")
    make_parameters(comp, [shape.scalar("f32")])
    _expect_invalid(_module_with(comp), "no ROOT")


def test_parameter_numbers_must_be_dense():
    comp = Computation("c")
    p = comp.add_instruction(Instruction(Opcode.PARAMETER, shape.scalar("f32"),
                                         parameter_number=1, name="p"))
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
