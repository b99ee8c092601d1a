"""Constant folding: through the interpreter, never materializing big arrays."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir.opcodes import Opcode
from hlort.passes import ConstantFolding, DeadCodeElimination
from hlort.text.parser import parse_module

FOLD = """
HloModule fold

ENTRY %main (x: s32[3]) -> s32[3] {
  %x = s32[3] parameter(0)
  %a = s32[3] constant({1, 2, 2147483647})
  %b = s32[3] constant({10, 20, 1})
  %sum = s32[3] add(s32[3] %a, s32[3] %b)
  %neg = s32[3] negate(s32[3] %sum)
  ROOT %r = s32[3] multiply(s32[3] %x, s32[3] %neg)
}
"""

EXPECTED = """
HloModule fold

ENTRY %main (x: s32[3]) -> s32[3] {
  %x = s32[3] parameter(0)
  %c = s32[3] constant({-11, -22, -2147483648})
  ROOT %r = s32[3] multiply(s32[3] %x, s32[3] %c)
}
"""


def test_golden_chain_with_wraparound(h):
    module = parse_module(FOLD)
    before = module.clone()
    assert h.run_passes(module, [ConstantFolding(), DeadCodeElimination()])
    h.assert_golden(module, EXPECTED)
    h.check_same_results(before, module)
    assert not h.run_passes(module, [ConstantFolding(), DeadCodeElimination()])


def test_broadcast_and_iota_stay():
    b = Builder("big")
    c = b.constant(np.float32(2.0))
    big = b.broadcast(c, [1000, 1000], [])
    iota = b.iota(shape.array("f32", [1000, 1000]), 0)
    module = b.build(b.add(big, iota))
    assert not ConstantFolding().run(module)
    assert {i.opcode for i in module.entry.instructions} == {
        Opcode.CONSTANT,
        Opcode.BROADCAST,
        Opcode.IOTA,
        Opcode.ADD,
    }


def test_result_size_is_capped():
    b = Builder("cap")
    c = b.constant(np.arange(64, dtype=np.float32))
    outer = b.dot_general(
        b.reshape(c, [64, 1]),
        b.reshape(c, [1, 64]),
        __import__("hlort").ir.DotDimensionNumbers((1,), (0,)),
    )
    module = b.build(outer)
    ConstantFolding(max_elements=1024).run(module)
    assert module.entry.root.opcode is Opcode.DOT  # 4096 elements from 128: not folded


def test_shrinking_results_fold_even_when_big():
    b = Builder("shrink")
    data = np.arange(4096, dtype=np.float32).reshape(64, 64)
    c = b.constant(data)
    total = b.reduce(c, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [1])
    module = b.build(total)
    assert ConstantFolding(max_elements=16).run(module)
    root = module.entry.root
    assert root.opcode is Opcode.CONSTANT and root.shape.dims == (64,)


def test_float_special_values_fold_like_the_interpreter(h):
    b = Builder("specials")
    x = b.parameter(shape.array("f32", [4]))
    a = b.constant(np.array([0.0, -0.0, np.inf, 1.0], np.float32))
    c = b.constant(np.array([0.0, 0.0, -np.inf, 0.0], np.float32))
    module = b.build(b.add(x, b.divide(a, c)))
    before = module.clone()
    assert ConstantFolding().run(module)
    h.check_same_results(before, module)


def test_side_effects_and_device_ids_never_fold(h):
    module = parse_module("""
HloModule keep

ENTRY %main () -> (f32[2], u32[]) {
  %c = f32[2] constant({1, 2})
  %e = f32[2] custom-call(f32[2] %c), custom_call_target="log",
    custom_call_has_side_effect=true
  %r = u32[] replica-id()
  ROOT %t = (f32[2], u32[]) tuple(f32[2] %e, u32[] %r)
}
""")
    assert not ConstantFolding().run(module)


def test_a_splat_operand_still_folds_after_the_simplifier_makes_it_a_broadcast(monkeypatch):
    """add(constant{2,2,2,2}, constant{1,2,3,4}): the simplifier spells the splat as
    broadcast(2), and the folder must see through that as XLA's does."""
    import hlort

    monkeypatch.setenv("HLORT_CACHE", "0")
    module = parse_module("""
HloModule m
ENTRY e {
  a = s32[4] constant({2, 2, 2, 2})
  b = s32[4] constant({1, 2, 3, 4})
  ROOT s = s32[4] add(a, b)
}""")
    exe = hlort.compile(module, "interpreter")
    assert " add(" not in exe.as_text()
    np.testing.assert_array_equal(exe(), np.array([3, 4, 5, 6], np.int32))


def test_a_broadcast_operand_counts_as_its_stored_constant_for_the_size_bound():
    b = Builder("bcast")
    big = b.broadcast(b.constant(np.float32(2.0)), [100, 100], [])
    module = b.build(b.add(big, big))  # 10,000 elements from 1 stored: not materialized
    assert not ConstantFolding(max_elements=1024).run(module)
    b = Builder("small")
    small = b.broadcast(b.constant(np.float32(2.0)), [4], [])
    module = b.build(b.add(small, b.constant(np.arange(4, dtype=np.float32))))
    assert ConstantFolding().run(module)
    np.testing.assert_array_equal(module.entry.root.literal, np.arange(4) + 2.0)
