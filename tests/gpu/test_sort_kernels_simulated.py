"""The GPU sort and top-k kernels (sort_schedule.py) on the host simulator against the
interpreter, bit for bit, for both strategies, payloads, descending and FLOAT compares with
NaN and signed zeros, a leading sort dimension, rows in global memory (past shared memory)
and top-k both ways; 32- and 64-wide warps."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.gpu_sort_programs import SORT_PROGRAMS, sort_inputs
from hlort.text.parser import parse_module


@pytest.mark.parametrize("warp", [32, 64])
@pytest.mark.parametrize("name", sorted(SORT_PROGRAMS))
def test_sort_kernel_matches_the_interpreter_bit_for_bit(name, warp):
    text, schedule, strategy = SORT_PROGRAMS[name]
    module = parse_module(text)
    shapes = [(p.shape.dtype.name, p.shape.dims) for p in module.entry.parameters]
    args = sort_inputs(name, shapes)
    expected = [np.asarray(v) for v in flatten_value(evaluate(module, args))]
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    program = compile_gpu_program(optimized, HostSimTarget(warp))
    assert not program.fallbacks, program.fallbacks
    assert [k.schedule for k in program.kernels] == [schedule]
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        assert g.tobytes() == e.tobytes(), (g, e)


def test_the_strategies_are_the_ones_named():
    from hlort.codegen.gpu.compiler import wrap_instruction
    from hlort.codegen.gpu.sort_schedule import plan_gpu_sort, sorted_instruction

    for name, (text, _schedule, strategy) in SORT_PROGRAMS.items():
        root = parse_module(text).entry.root
        plan, why = plan_gpu_sort(HostSimTarget(32), sorted_instruction(wrap_instruction(root)))
        assert plan is not None and plan.sort.strategy == strategy, (name, why)
