"""Module, computation and instruction structure: names, order, users, cloning."""

import numpy as np
import pytest

from hlort import Builder, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Computation, Instruction, Module, Opcode, verify_module
from hlort.ir.computation import make_parameters


def _iota_module():
    b = Builder("m")
    a = b.iota(shape.array("s32", [4]), 0)
    c = b.constant(np.array([1, 2, 3, 4], np.int32))
    t = b.op(Opcode.TUPLE, (a, c)) if _has_tuple() else a
    return b.build(t), a, c


def _has_tuple():
    from hlort.ir.shape_inference import has_rule

    return has_rule(Opcode.TUPLE)


def test_unique_names_within_module():
    m = Module("m")
    assert m.unique_name("x") == "x"
    assert m.unique_name("x") == "x.1"
    assert m.unique_name("x") == "x.2"
    assert m.unique_name("x.1") == "x.3"
    assert m.unique_name("y.7") == "y.7"


def test_builder_computation_names_are_made_unique():
    b = Builder("main")
    x = b.constant(np.float32(1), name="c")
    y = b.constant(np.float32(2), name="c")
    m = b.build(y)
    names = [i.name for i in m.entry.instructions]
    assert len(set(names)) == 2 and x.name != y.name


def test_post_order_puts_operands_first_and_keeps_dead_code():
    comp = Computation("c")
    (p,) = make_parameters(comp, [shape.scalar("f32")])
    dead = comp.add_instruction(
        Instruction(Opcode.CONSTANT, shape.scalar("f32"), (), literal=np.array(1, np.float32))
    )
    root = comp.add_instruction(Instruction(Opcode.NEGATE, shape.scalar("f32"), (p,)))
    # insert out of order on purpose: user before operand
    comp.instructions = [root, dead, p]
    comp.set_root(root)
    order = comp.post_order()
    assert order.index(p) < order.index(root)
    assert dead in order
    assert comp.reachable_from_root() == [p, root]
    assert comp.users()[p] == [root]


def test_replace_all_uses_moves_root_and_users():
    comp = Computation("c")
    a, b = make_parameters(comp, [shape.scalar("f32")] * 2)
    n = comp.add_instruction(Instruction(Opcode.NEGATE, shape.scalar("f32"), (a,)))
    comp.set_root(n)
    comp.replace_all_uses(a, b)
    assert n.operands == [b]
    comp.replace_all_uses(n, a)
    assert comp.root is a


def test_clone_is_deep_and_equal():
    m, a, c = _iota_module()
    copy = m.clone()
    assert copy is not m and copy.entry is not m.entry
    assert [i.name for i in copy.entry.instructions] == [i.name for i in m.entry.instructions]
    pairs = zip(copy.entry.instructions, m.entry.instructions, strict=True)
    assert all(x is not y for x, y in pairs)
    verify_module(copy)


def test_remove_root_is_refused():
    m, a, c = _iota_module()
    with pytest.raises(HlortError) as err:
        m.entry.remove_instruction(m.entry.root)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT


def test_reachable_computations_callees_first():
    b = Builder("main")
    x = b.parameter(shape.array("f32", [3]))
    zero = b.constant(np.float32(0))
    reducer = b.scalar_computation("add", "f32") if _has("add") else None
    if reducer is None:
        pytest.skip("add is not registered yet")
    r = b.reduce(x, zero, reducer, [0])
    m = b.build(r)
    comps = m.reachable_computations()
    assert comps[-1] is m.entry and comps[0] is reducer
    assert m.computations[-1] is m.entry


def _has(op):
    from hlort.ir.shape_inference import has_rule

    return has_rule(Opcode(op))
