"""FusionPolicy.can_emit: the fusion passes never make a fusion the backend says it cannot emit,
and asking changes nothing when the backend accepts everything."""

from __future__ import annotations

import numpy as np

from hlort import shape
from hlort.builder import Builder
from hlort.ir.opcodes import Opcode
from hlort.passes import (
    DeadCodeElimination,
    FusionPolicy,
    InstructionFusion,
    MultiOutputFusion,
    TupleSimplifier,
)
from hlort.text.printer import print_computation


def _softmax_module():
    b = Builder("softmax")
    x = b.parameter(shape.array("f32", [8, 32]))
    f32 = x.shape.dtype
    m = b.reduce(x, b.constant(np.float32(-np.inf)), b.scalar_computation("maximum", f32), [1])
    e = b.exp(b.subtract(x, b.broadcast(m, [8, 32], [0])))
    s = b.reduce(e, b.constant(np.float32(0)), b.scalar_computation("add", f32), [1])
    return b.build(b.divide(e, b.broadcast(s, [8, 32], [0])))


def _fuse(h, module, policy: FusionPolicy):
    before = module.clone()
    passes = [
        InstructionFusion(policy),
        MultiOutputFusion(policy),
        TupleSimplifier(),
        DeadCodeElimination(),
    ]
    h.run_passes(module, passes)
    h.check_same_results(before, module)
    return [i for i in module.entry.instructions if i.opcode is Opcode.FUSION]


def _has(comp, opcode) -> bool:
    return any(i.opcode is opcode for i in comp.instructions)


def test_a_refused_fusion_is_never_made(h):
    asked = []

    def no_two_reductions(comp) -> bool:
        asked.append(comp)
        return sum(i.opcode is Opcode.REDUCE for i in comp.instructions) < 2

    policy = FusionPolicy(row_epilogue_fusion=True, can_emit=no_two_reductions)
    fusions = _fuse(h, _softmax_module(), policy)
    assert asked, "the policy was never asked"
    assert len(fusions) >= 2
    for f in fusions:
        assert no_two_reductions(f.attrs["calls"]), print_computation(f.attrs["calls"])


def test_refusing_merges_with_a_tuple_root_keeps_single_output_fusions(h):
    def single_output(comp) -> bool:
        return comp.root.opcode is not Opcode.TUPLE

    fusions = _fuse(h, _softmax_module(), FusionPolicy(can_emit=single_output))
    assert fusions and all(not f.shape.is_tuple for f in fusions)


def test_accepting_everything_changes_nothing(h):
    plain = _softmax_module()
    asked = _softmax_module()
    _fuse(h, plain, FusionPolicy(row_epilogue_fusion=True))
    _fuse(h, asked, FusionPolicy(row_epilogue_fusion=True, can_emit=lambda comp: True))
    assert plain.fingerprint() == asked.fingerprint()
    (f,) = [i for i in asked.entry.instructions if i.opcode is Opcode.FUSION]
    assert _has(f.attrs["calls"], Opcode.REDUCE)


def test_the_check_is_not_part_of_the_policy_repr():
    """The executable cache keys on repr(policy): a function's address must not change it."""
    assert repr(FusionPolicy(can_emit=lambda c: True)) == repr(FusionPolicy())
