"""Every pass is idempotent: on its own output, and on the pipeline's output."""

from __future__ import annotations

import pytest

from hlort import examples
from hlort.passes import (
    AlgebraicSimplifier,
    CallInliner,
    CommonSubexpressionElimination,
    ConstantFolding,
    DeadCodeElimination,
    FixedPoint,
    FusionPolicy,
    InstructionFusion,
    MultiOutputFusion,
    Scheduler,
    TupleSimplifier,
    default_passes,
    run_default_pipeline,
)

SEEDS = {
    "reduce_sum_fma": lambda: examples.reduce_sum_fma(64)[0],
    "softmax_relu_matmul": lambda: examples.softmax_relu_matmul(4, 8, 16)[0],
    "layernorm": lambda: examples.layernorm(8, 16)[0],
}
PASSES = {
    "call-inlining": CallInliner,
    "tuple-simplification": TupleSimplifier,
    "algebraic-simplifier": AlgebraicSimplifier,
    "constant-folding": ConstantFolding,
    "cse": CommonSubexpressionElimination,
    "dce": DeadCodeElimination,
    "instruction-fusion": InstructionFusion,
    "epilogue-fusion": lambda: InstructionFusion(FusionPolicy(epilogue_fusion=True)),
    "multi-output-fusion": MultiOutputFusion,
    "scheduling": Scheduler,
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", PASSES)
def test_each_pass_twice(h, seed, name):
    module = SEEDS[seed]()
    h.run_passes(module, [PASSES[name]()])
    assert not h.run_passes(module, [PASSES[name]()])


def _flatten(passes):
    for p in passes:
        if isinstance(p, FixedPoint):
            yield from _flatten(p.passes)
        else:
            yield p


@pytest.mark.parametrize("seed", SEEDS)
def test_every_pass_is_a_no_op_on_the_pipeline_output(h, seed):
    module = SEEDS[seed]()
    run_default_pipeline(module, verify=True)
    for p in _flatten(default_passes()):
        assert not p.run(module), p.name
