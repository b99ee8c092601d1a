"""Every convolution case of the conformance suite compiled for the GPU and run on the host
simulator: no convolution falls back to the host (pred and complex ones included), and every
result matches the interpreter under the case's own comparison kind (conv_schedule.py sums in
the interpreter's order)."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases

CASES = [c for c in all_cases() if c.op == "convolution"]


@pytest.mark.parametrize("warp", [32])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_convolution_case_runs_the_direct_kernel(case, warp):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(warp))
    fallbacks = [f for f in program.fallbacks if f.opcode == "convolution"]
    assert not fallbacks, fallbacks
    assert any(k.schedule == "convolution" for k in program.kernels)
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem
