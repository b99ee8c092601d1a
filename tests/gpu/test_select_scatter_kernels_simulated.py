"""The GPU select-and-scatter kernel (select_scatter_schedule.py) on the host simulator against
the interpreter, bit for bit: overlapping padded windows with tied maxima (NaN, infinities and
-0.0 among them), window and base dilation, negative padding, a min select, and a
non-commutative scatter whose result depends on the windows' order."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.gpu_select_scatter_programs import (
    SELECT_SCATTER_PROGRAMS,
    select_scatter_inputs,
    select_scatter_text,
)
from hlort.text.parser import parse_module


@pytest.mark.parametrize("name", sorted(SELECT_SCATTER_PROGRAMS))
def test_select_and_scatter_kernel_matches_the_interpreter(name):
    module = parse_module(select_scatter_text(name))
    args = select_scatter_inputs(name)
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    program = compile_gpu_program(optimized, HostSimTarget(32))
    assert not program.fallbacks, program.fallbacks
    assert [k.schedule for k in program.kernels] == ["select_and_scatter"]
    (got,) = HostSimRunner(program).run(args)
    assert got.tobytes() == expected.tobytes(), (got, expected)
