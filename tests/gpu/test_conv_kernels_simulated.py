"""The GPU direct convolution kernel (conv_schedule.py) on the host simulator against the
interpreter: unusual dimension numbers, strides, negative padding, base and window dilation,
reversal, feature and batch groups, integer, narrow-float, complex and pred accumulation.
Inputs are small multiples of 1/4, so every sum is exact and results must be equal bit for bit,
the long window (which the interpreter sums by BLAS) included."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.comparison import describe_mismatch
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


@pytest.mark.parametrize("name", ["c64-padded-dilated", "c128-feature-groups-1d"])
def test_complex_conv_with_nan_infinities_and_negative_zero(name):
    """NaN and infinities in either part of input and kernel (a padded position times an
    infinite kernel value is NaN, as in the interpreter), -0 - 0i products summing to +0:
    compared exactly (every non-NaN bit; NaN against any NaN, as LLVM and PTX define no NaN
    payload)."""
    module = conv_module(name)
    args = conv_inputs(name)
    for arr, at in zip(args, (1, 2), strict=True):
        flat = arr.reshape(-1)
        flat[0] = complex(np.nan, flat[0].imag)
        flat[at * 3] = complex(flat[at * 3].real, np.inf)
        flat[at * 5] = complex(-np.inf, -0.0)
        flat[-1] = complex(-0.0, -0.0)
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    program = compile_gpu_program(optimized, HostSimTarget(32))
    assert not program.fallbacks and [k.schedule for k in program.kernels] == ["convolution"]
    (got,) = HostSimRunner(program).run(args)
    assert np.isnan(expected).any() and np.isinf(expected).any()
    problem = describe_mismatch(got, expected, "exact")
    assert problem is None, problem
