"""The GPU direct convolution kernel (conv_schedule.py) on the host simulator against the
interpreter: unusual dimension numbers, strides, negative padding, base and window dilation,
reversal, feature and batch groups, integer and narrow-float accumulation. Inputs are small
multiples of 1/4, so every sum is exact and results must be equal bit for bit, the long window
(which the interpreter sums by BLAS) included."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.gpu_conv_programs import CONV_PROGRAMS, conv_inputs, conv_module


@pytest.mark.parametrize("name", sorted(CONV_PROGRAMS))
def test_conv_kernel_matches_the_interpreter(name):
    module = conv_module(name)
    args = conv_inputs(name)
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    program = compile_gpu_program(optimized, HostSimTarget(32))
    assert not program.fallbacks, program.fallbacks
    assert [k.schedule for k in program.kernels] == ["convolution"]
    (got,) = HostSimRunner(program).run(args)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes(), (got, expected)
