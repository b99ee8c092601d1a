"""Every select-and-scatter case of the conformance suite compiled for the GPU and run on the
host simulator: none falls back to the host, and every result matches the interpreter under the
case's own comparison kind (select_scatter_schedule.py gathers in the interpreter's order)."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases

CASES = [c for c in all_cases() if c.op == "select-and-scatter"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_select_and_scatter_case_runs_its_kernel(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32))
    assert not [f for f in program.fallbacks if f.opcode == "select-and-scatter"]
    assert any(k.schedule == "select_and_scatter" for k in program.kernels)
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem
