"""Multi-output fusion: siblings, producer-consumer chains, reduction epilogues, no cycles."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir import DotDimensionNumbers, FusionKind
from hlort.ir.opcodes import Opcode
from hlort.passes import (
    DeadCodeElimination,
    FusionPolicy,
    InstructionFusion,
    MultiOutputFusion,
    TupleSimplifier,
)

FUSE = [InstructionFusion(), MultiOutputFusion(), TupleSimplifier(), DeadCodeElimination()]


def fuse(h, module, policy: FusionPolicy | None = None):
    before = module.clone()
    passes = [
        InstructionFusion(policy),
        MultiOutputFusion(policy),
        TupleSimplifier(),
        DeadCodeElimination(),
    ]
    h.run_passes(module, passes)
    h.check_same_results(before, module)
    assert not h.run_passes(module, passes), "not idempotent"
    return [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]


def _reduce(b, x, op, init, dims=(1,)):
    dt = x.shape.dtype
    return b.reduce(
        x, b.constant(np.array(init, dt.numpy)), b.scalar_computation(op, dt), list(dims)
    )


def test_sibling_reductions_share_one_read(h):
    b = Builder("siblings")
    x = b.parameter(shape.array("f32", [8, 32]))
    total = _reduce(b, b.abs(x), "add", 0.0)
    largest = _reduce(b, x, "maximum", -np.inf)
    module = b.build(b.tuple([total, largest]))
    (f,) = fuse(h, module)
    assert f.shape.is_tuple and f.attrs["kind"] is FusionKind.INPUT
    assert f.attrs["calls"].root.opcode is Opcode.TUPLE
    assert [o.name for o in f.operands] == ["p0"]


def test_softmax_like_chain_becomes_one_kernel_plus_divide(h):
    b = Builder("softmax")
    x = b.parameter(shape.array("f32", [8, 32]))
    m = _reduce(b, x, "maximum", -np.inf)
    e = b.exp(b.subtract(x, b.broadcast(m, [8, 32], [0])))
    s = _reduce(b, e, "add", 0.0)
    module = b.build(b.divide(e, b.broadcast(s, [8, 32], [0])))
    fs = fuse(h, module)
    assert len(fs) == 2
    kinds = sorted(f.attrs["kind"].value for f in fs)
    assert kinds == ["kInput", "kLoop"]
    assert h.count(module, Opcode.EXP) == 0  # exp lives inside the multi-output fusion


def test_row_epilogue_joins_the_reduction_when_asked(h):
    """With row_epilogue_fusion, softmax is one kernel: the divide reads rows the reduces read."""

    def softmax():
        b = Builder("softmax")
        x = b.parameter(shape.array("f32", [8, 32]))
        m = _reduce(b, x, "maximum", -np.inf)
        e = b.exp(b.subtract(x, b.broadcast(m, [8, 32], [0])))
        s = _reduce(b, e, "add", 0.0)
        return b.build(b.divide(e, b.broadcast(s, [8, 32], [0])))

    fs = fuse(h, softmax(), FusionPolicy(row_epilogue_fusion=True))
    assert len(fs) == 1 and fs[0].attrs["kind"] is FusionKind.INPUT
    assert fs[0].attrs["calls"].root.opcode is Opcode.DIVIDE
    assert not fs[0].shape.is_tuple  # the exp is recomputed per row, never written out


def test_row_epilogue_needs_trailing_reduced_dims(h):
    b = Builder("columns")
    x = b.parameter(shape.array("f32", [8, 32]))
    s = _reduce(b, x, "add", 0.0, dims=(0,))
    module = b.build(b.multiply(x, b.broadcast(s, [8, 32], [1])))
    fuse(h, module, FusionPolicy(row_epilogue_fusion=True))
    assert h.count(module, Opcode.REDUCE) == 1  # a column reduction stays apart


def test_reduction_epilogue_joins_the_reduction(h):
    b = Builder("epilogue")
    x = b.parameter(shape.array("f32", [8, 32]))
    s = _reduce(b, x, "add", 0.0)
    scaled = b.rsqrt(b.add(s, b.broadcast(b.constant(np.float32(1e-5)), [8], [])))
    module = b.build(b.multiply(x, b.broadcast(scaled, [8, 32], [0])))
    fs = fuse(h, module)
    assert len(fs) == 2
    reducing = next(f for f in fs if f.attrs["kind"] is FusionKind.INPUT)
    assert reducing.attrs["calls"].root.opcode is Opcode.RSQRT


def test_no_merge_through_an_outside_path(h):
    """F2 reads a dot of F1's result: putting F1 and F2 in one fusion would be a cycle."""
    b = Builder("cycle")
    x = b.parameter(shape.array("f32", [8, 8]))
    s1 = _reduce(b, b.exp(x), "add", 0.0)  # [8]
    mixed = b.dot_general(b.reshape(s1, [1, 8]), x, DotDimensionNumbers((1,), (0,)))  # [1, 8]
    s2 = _reduce(b, b.multiply(x, b.broadcast(b.reshape(mixed, [8]), [8, 8], [0])), "add", 0.0)
    module = b.build(b.add(s1, s2))
    fs = fuse(h, module)
    assert h.count(module, Opcode.DOT) == 1
    assert len(fs) >= 2


def test_incompatible_spaces_stay_apart(h):
    b = Builder("spaces")
    x = b.parameter(shape.array("f32", [8, 32]))
    rows = _reduce(b, b.abs(x), "add", 0.0, dims=(1,))
    cols = _reduce(b, b.negate(x), "add", 0.0, dims=(0,))
    module = b.build(b.tuple([rows, cols]))
    fs = fuse(h, module)
    assert len(fs) == 2 and not any(f.shape.is_tuple for f in fs)


def test_policy_turns_it_off(h):
    b = Builder("siblings")
    x = b.parameter(shape.array("f32", [8, 32]))
    module = b.build(
        b.tuple([_reduce(b, b.abs(x), "add", 0.0), _reduce(b, b.negate(x), "maximum", -np.inf)])
    )
    fs = fuse(h, module, FusionPolicy(multi_output_fusion=False))
    assert len(fs) == 2


def test_output_limit(h):
    b = Builder("many")
    x = b.parameter(shape.array("f32", [8, 32]))
    outs = [
        _reduce(
            b, b.multiply(x, b.broadcast(b.constant(np.float32(k + 2)), [8, 32], [])), "add", 0.0
        )
        for k in range(6)
    ]
    module = b.build(b.tuple(outs))
    fs = fuse(h, module, FusionPolicy(max_outputs=3))
    assert all(len(f.shape.elements) <= 3 for f in fs if f.shape.is_tuple)
    assert len(fs) >= 2


SIBLINGS = """
HloModule siblings
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
ENTRY %main (x: f32[4,8]) -> f32[4] {
  %x = f32[4,8] parameter(0)
  %z = f32[] constant(0)
  %sum = f32[4] reduce(f32[4,8] %x, f32[] %z), dimensions={1}, to_apply=%add
  %ninf = f32[] constant(-inf)
  %mx = f32[4] reduce(f32[4,8] %x, f32[] %ninf), dimensions={1}, to_apply=%max
  ROOT %d = f32[4] subtract(f32[4] %sum, f32[4] %mx)
}
"""

SIBLINGS_FUSED = """
HloModule siblings
%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}
%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}
%fused (p: f32[4,8]) -> f32[4] {
  %p = f32[4,8] parameter(0)
  %z = f32[] constant(0)
  %sum = f32[4] reduce(f32[4,8] %p, f32[] %z), dimensions={1}, to_apply=%add
  %ninf = f32[] constant(-inf)
  %mx = f32[4] reduce(f32[4,8] %p, f32[] %ninf), dimensions={1}, to_apply=%max
  ROOT %d = f32[4] subtract(f32[4] %sum, f32[4] %mx)
}
ENTRY %main (x: f32[4,8]) -> f32[4] {
  %x = f32[4,8] parameter(0)
  ROOT %f = f32[4] fusion(f32[4,8] %x), kind=kInput, calls=%fused
}
"""


def test_golden_siblings_and_their_epilogue(h):
    """The two reductions merge as siblings; their subtract then joins as an epilogue."""
    from hlort.text.parser import parse_module

    module = parse_module(SIBLINGS)
    fs = fuse(h, module)
    assert len(fs) == 1
    h.assert_golden(module, SIBLINGS_FUSED)
