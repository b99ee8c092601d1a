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


def test_padded_conv_of_an_empty_input_reads_no_input():
    """An input with a zero-size spatial dimension still has outputs when padded: each sums
    padding products only (0 * w: NaN at an infinite kernel value, as in the interpreter).
    Element 0 of an empty input is no memory, so the kernel must never load through that
    argument (the simulator would read whatever lies there; a GPU may fault)."""
    import re

    from hlort import Builder
    from hlort.shape import array
    from hlort.testing.gpu_conv_programs import _NHWC, _window

    b = Builder("empty_input_conv")
    lhs, rhs = array("f32", (1, 0, 4, 3)), array("f32", (2, 2, 3, 5))
    window = _window([2, 2], pads=[(2, 2), (0, 0)])
    module = b.build(b.convolution(b.parameter(lhs), b.parameter(rhs), window, _NHWC))
    args = [np.zeros((1, 0, 4, 3), np.float32), np.ones((2, 2, 3, 5), np.float32)]
    args[1][0, 1, 2, 3] = np.inf
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    program = compile_gpu_program(optimized, HostSimTarget(32))
    assert not program.fallbacks and [k.schedule for k in program.kernels] == ["convolution"]
    (got,) = HostSimRunner(program).run(args)
    assert expected.shape == (1, 3, 3, 5) and np.isnan(expected).any()
    assert got.tobytes() == expected.tobytes()
    define = re.search(r"define void @\"k0_convolution\"\((ptr[^,]*?(%\S+?)),", program.llvm_ir)
    input_arg = define.group(2)
    body = program.llvm_ir[define.end() :]
    assert input_arg not in body, f"the kernel reads the empty input through {input_arg}"
