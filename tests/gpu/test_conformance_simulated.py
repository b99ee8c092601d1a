"""Conformance cases compiled for the GPU and run on the host simulator (host_simulator.py),
compared with the reference interpreter under the suite's own comparison kind: one case per op
of the quick sample (every op), so kernels, gemm steps and host fallbacks all run end to end."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases


def _one_per_op():
    chosen = {}
    for case in all_cases(quick=True):
        chosen.setdefault(case.op, case)
    return list(chosen.values())


CASES = _one_per_op()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case_matches_the_interpreter(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32))
    got = HostSimRunner(program).run(args)
    assert len(got) == len(expected)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem
