"""While loops as HostLoop steps (condition and body on the device, the loop on the host): every
while case of the conformance suite compiled with ``host_loops=True`` has no host fallback for
its while and matches the interpreter on the host simulator; the program round-trips."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.program import GpuProgram, HostLoop
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.interpreter_backend import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases

CASES = [c for c in all_cases() if c.op == "while"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_while_runs_as_a_host_loop(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    module = case.module.clone()
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), host_loops=True)
    assert any(isinstance(s, HostLoop) for s in program.steps)
    assert "while" not in {f.opcode for f in program.fallbacks}
    assert GpuProgram.from_bytes(program.to_bytes()) == program
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem
