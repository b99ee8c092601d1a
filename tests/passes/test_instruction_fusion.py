"""Instruction fusion: loop, input and epilogue fusion, duplication rules and the policy."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers, FusionKind
from hlort.ir.opcodes import Opcode
from hlort.passes import DeadCodeElimination, FusionPolicy, InstructionFusion
from hlort.text.parser import parse_module

LOOP = """
HloModule loop

ENTRY %main (x: f32[4,8], b: f32[8]) -> f32[8,4] {
  %x = f32[4,8] parameter(0)
  %b = f32[8] parameter(1)
  %bb = f32[4,8] broadcast(f32[8] %b), dimensions={1}
  %sum = f32[4,8] add(f32[4,8] %x, f32[4,8] %bb)
  %two = f32[] constant(2)
  %b2 = f32[4,8] broadcast(f32[] %two), dimensions={}
  %prod = f32[4,8] multiply(f32[4,8] %sum, f32[4,8] %b2)
  %neg = f32[4,8] negate(f32[4,8] %prod)
  ROOT %t = f32[8,4] transpose(f32[4,8] %neg), dimensions={1,0}
}
"""

LOOP_FUSED = """
HloModule loop

%fused (p0: f32[4,8], p1: f32[8]) -> f32[8,4] {
  %p0 = f32[4,8] parameter(0)
  %p1 = f32[8] parameter(1)
  %bb = f32[4,8] broadcast(f32[8] %p1), dimensions={1}
  %sum = f32[4,8] add(f32[4,8] %p0, f32[4,8] %bb)
  %two = f32[] constant(2)
  %b2 = f32[4,8] broadcast(f32[] %two), dimensions={}
  %prod = f32[4,8] multiply(f32[4,8] %sum, f32[4,8] %b2)
  %neg = f32[4,8] negate(f32[4,8] %prod)
  ROOT %t = f32[8,4] transpose(f32[4,8] %neg), dimensions={1,0}
}

ENTRY %main (x: f32[4,8], b: f32[8]) -> f32[8,4] {
  %x = f32[4,8] parameter(0)
  %b = f32[8] parameter(1)
  ROOT %f = f32[8,4] fusion(f32[4,8] %x, f32[8] %b), kind=kLoop, calls=%fused
}
"""


def fuse(h, module, policy: FusionPolicy | None = None) -> bool:
    before = module.clone()
    changed = h.run_passes(module, [InstructionFusion(policy)])
    h.check_same_results(before, module)
    assert not h.run_passes(module, [InstructionFusion(policy), DeadCodeElimination()])
    return changed


def fusions(module):
    return [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]


def test_golden_loop_fusion(h):
    module = parse_module(LOOP)
    assert fuse(h, module)
    h.assert_golden(module, LOOP_FUSED)
    (f,) = fusions(module)
    assert f.attrs["kind"] is FusionKind.LOOP
    assert f.attrs["calls"].is_fusion_computation


def test_input_fusion_into_reduce(h):
    from hlort import examples

    module, _ = examples.reduce_sum_fma(16)
    assert fuse(h, module)
    (f,) = fusions(module)
    assert module.entry.root is f and f.attrs["kind"] is FusionKind.INPUT
    assert [o.name for o in f.operands] == ["x", "y", "z"]


def test_cheap_producer_is_copied_expensive_one_is_not(h):
    b = Builder("dup")
    x = b.parameter(shape.array("f32", [16]))
    y = b.parameter(shape.array("f32", [16]))
    cheap = b.add(x, y)
    costly = b.exp(x)
    u = b.multiply(b.negate(cheap), costly)
    v = b.subtract(b.abs(cheap), costly)
    module = b.build(b.tuple([u, v]))
    assert fuse(h, module)
    entry_ops = [i.opcode for i in module.entry.instructions]
    assert Opcode.ADD not in entry_ops  # copied into both fusions
    assert entry_ops.count(Opcode.EXP) == 1  # computed once, read by both
    assert len(fusions(module)) == 2


def test_reduce_and_dot_are_never_copied_or_fused_as_producers(h):
    b = Builder("heroes")
    x = b.parameter(shape.array("f32", [4, 8]))
    w = b.parameter(shape.array("f32", [8, 8]))
    r = b.reduce(x, b.constant(np.float32(0)), b.scalar_computation("add", "f32"), [1])
    d = b.dot_general(x, w, DotDimensionNumbers((1,), (0,)))
    out = b.add(d, b.broadcast(r, [4, 8], [0]))
    module = b.build(b.tuple([out, b.negate(d)]))
    assert fuse(h, module)
    assert sum(1 for i in module.entry.instructions if i.opcode is Opcode.REDUCE) == 1
    assert sum(1 for i in module.entry.instructions if i.opcode is Opcode.DOT) == 1


def _bias_relu(users_of_dot: int = 1):
    b = Builder("epilogue")
    a = b.parameter(shape.array("f32", [4, 8]))
    w = b.parameter(shape.array("f32", [8, 16]))
    bias = b.parameter(shape.array("f32", [16]))
    d = b.dot_general(a, b.transpose(w, [0, 1]), DotDimensionNumbers((1,), (0,)))
    zero = b.broadcast(b.constant(np.float32(0)), [4, 16], [])
    out = b.maximum(b.add(d, b.broadcast(bias, [4, 16], [1])), zero)
    if users_of_dot > 1:
        out = b.tuple([out, b.exp(d)])
    return b.build(out)


def test_epilogue_fusion_follows_the_policy(h):
    off = _bias_relu()
    fuse(h, off, FusionPolicy(epilogue_fusion=False))
    assert [f.attrs["kind"] for f in fusions(off)] == [FusionKind.LOOP]
    assert h.count(off, Opcode.DOT) == 1

    on = _bias_relu()
    fuse(h, on, FusionPolicy(epilogue_fusion=True))
    (f,) = fusions(on)
    assert f.attrs["kind"] is FusionKind.OUTPUT
    assert h.count(on, Opcode.DOT) == 0
    inner = f.attrs["calls"]
    dot = next(i for i in inner.instructions if i.opcode is Opcode.DOT)
    # nothing is fused into the dot's operands (the transpose stays outside)
    assert all(o.opcode is Opcode.PARAMETER for o in dot.operands)


def test_epilogue_needs_a_single_user_dot(h):
    module = _bias_relu(users_of_dot=2)
    fuse(h, module, FusionPolicy(epilogue_fusion=True))
    assert h.count(module, Opcode.DOT) == 1


def test_expensive_producer_is_not_recomputed_per_broadcast_element(h):
    b = Builder("reuse")
    s = b.parameter(shape.array("f32", [4]))
    y = b.parameter(shape.array("f32", [4, 256]))
    e = b.exp(s)
    module = b.build(b.add(b.broadcast(e, [4, 256], [0]), y))
    fuse(h, module)
    assert h.count(module, Opcode.EXP) == 1
    (f,) = fusions(module)
    assert all(i.opcode is not Opcode.EXP for i in f.attrs["calls"].instructions)


def test_constants_alone_make_no_fusion(h):
    module = parse_module("""
HloModule c
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[8]) -> f32[] {
  %x = f32[8] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[8] %x, f32[] %z), dimensions={0}, to_apply=%add
}
""")
    assert not InstructionFusion().run(module)


@pytest.mark.parametrize(
    "policy,expected_fusions",
    [
        (FusionPolicy(), 1),
        (FusionPolicy(max_fused_instructions=4), 5),
        (FusionPolicy(loop_fusion=False), 0),
    ],
)
def test_policy_limits(h, policy, expected_fusions):
    b = Builder("chain")
    x = b.parameter(shape.array("f32", [32]))
    y = x
    for _ in range(10):
        y = b.negate(b.abs(y)) if len(b.computation.instructions) % 2 else b.abs(b.negate(y))
    module = b.build(y)
    fuse(h, module, policy)
    assert len(fusions(module)) == expected_fusions
    for f in fusions(module):
        comp = f.attrs["calls"]
        size = sum(1 for i in comp.instructions if i.opcode is not Opcode.PARAMETER)
        assert size <= policy.max_fused_instructions


def test_reduce_input_fusion_can_be_turned_off(h):
    from hlort import examples

    module, _ = examples.reduce_sum_fma(16)
    fuse(h, module, FusionPolicy(reduce_input_fusion=False))
    assert h.count(module, Opcode.REDUCE) == 1
    assert [f.attrs["kind"] for f in fusions(module)] == [FusionKind.LOOP]


def test_side_effects_are_never_fused(h):
    module = parse_module("""
HloModule eff
ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %n = f32[4] negate(f32[4] %x)
  %e = f32[4] custom-call(f32[4] %n), custom_call_target="log",
    custom_call_has_side_effect=true
  ROOT %a = f32[4] abs(f32[4] %e)
}
""")
    InstructionFusion().run(module)
    assert h.count(module, Opcode.CUSTOM_CALL) == 1


def test_loop_bodies_are_fused_too(h):
    module = parse_module("""
HloModule loop
%body (s: (s32[], f32[8])) -> (s32[], f32[8]) {
  %s = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[8]) %s), index=0
  %one = s32[] constant(1)
  %next = s32[] add(s32[] %i, s32[] %one)
  %v = f32[8] get-tuple-element((s32[], f32[8]) %s), index=1
  %h = f32[] constant(0.5)
  %hb = f32[8] broadcast(f32[] %h), dimensions={}
  %m = f32[8] multiply(f32[8] %v, f32[8] %hb)
  %a = f32[8] abs(f32[8] %m)
  ROOT %t = (s32[], f32[8]) tuple(s32[] %next, f32[8] %a)
}
%cond (s: (s32[], f32[8])) -> pred[] {
  %s = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element((s32[], f32[8]) %s), index=0
  %n = s32[] constant(4)
  ROOT %c = pred[] compare(s32[] %i, s32[] %n), direction=LT
}
ENTRY %main (x: f32[8]) -> (s32[], f32[8]) {
  %x = f32[8] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]) tuple(s32[] %zero, f32[8] %x)
  ROOT %w = (s32[], f32[8]) while((s32[], f32[8]) %init), condition=%cond, body=%body
}
""")
    assert fuse(h, module)
    body = module.computation("body")
    assert sum(1 for i in body.instructions if i.opcode is Opcode.FUSION) == 1


def test_shared_fused_computation_is_copied_before_fusing_into_it(h):
    module = parse_module("""
HloModule shared
%f (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %n = f32[4] negate(f32[4] %p)
}
ENTRY %main (x: f32[4], y: f32[4]) -> (f32[4], f32[4]) {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(1)
  %ax = f32[4] abs(f32[4] %x)
  %f1 = f32[4] fusion(f32[4] %ax), kind=kLoop, calls=%f
  %f2 = f32[4] fusion(f32[4] %y), kind=kLoop, calls=%f
  ROOT %t = (f32[4], f32[4]) tuple(f32[4] %f1, f32[4] %f2)
}
""")
    assert fuse(h, module)
    f1, f2 = module.entry.root.operands
    assert f1.attrs["calls"] is not f2.attrs["calls"]
    assert sum(1 for i in f2.attrs["calls"].instructions if i.opcode is Opcode.ABS) == 0
