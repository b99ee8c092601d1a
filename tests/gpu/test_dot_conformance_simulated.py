"""Every dot case of the conformance suite (its NaN, infinity and -0.0 values included) compiled
as for a GPU runtime without a BLAS library (``gemm_library=False``) and run on the host
simulator: no dot falls back to the host (pred and complex dots included), and every result
matches the interpreter under the case's own comparison kind."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases

CASES = [c for c in all_cases() if c.op == "dot"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_dot_case_runs_the_dot_kernel(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), gemm_library=False)
    assert [f for f in program.fallbacks if f.opcode == "dot"] == []
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem
