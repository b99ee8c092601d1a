"""The GPU schedules' results against the reference interpreter, run on the host simulator
(host_simulator.py: one OS thread per GPU thread, real barriers and lane exchanges), for warp
sizes 32 (CUDA) and 64 (ROCm). Checks what the kernels compute; the PTX checks are in
plugins/cuda/tests."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.comparison import describe_mismatch
from hlort.testing.row_programs import REDUCERS, seed_full_sum, seed_row_sum, softmax_rows
from hlort.text.parser import parse_module

SEED = seed_row_sum(6, 300)
SOFTMAX = softmax_rows(5, 200)
FULL = seed_full_sum(70001, "full")
SHORT_ROWS = (
    "HloModule short\n"
    + REDUCERS
    + """
ENTRY main {
  x = f32[3,40] parameter(0)
  three = f32[] constant(3)
  ROOT r = f32[3] reduce(x, three), dimensions={1}, to_apply=add_f
}
"""
)
COLUMNS = (
    "HloModule columns\n"
    + REDUCERS
    + """
ENTRY main {
  x = f32[50,70] parameter(0)
  zero = f32[] constant(0)
  ROOT r = f32[70] reduce(x, zero), dimensions={0}, to_apply=add_f
}
"""
)
FEW_LONG_ROWS = (
    "HloModule few\n"
    + REDUCERS
    + """
ENTRY main {
  x = f32[2,33000] parameter(0)
  ninf = f32[] constant(-inf)
  m = f32[2] reduce(x, ninf), dimensions={1}, to_apply=max_f
  ROOT e = f32[2] exponential(m)
}
"""
)
TRANSPOSE = """HloModule transpose
ENTRY main {
  x = s32[2,70,45] parameter(0)
  ROOT t = s32[2,45,70] transpose(x), dimensions={0,2,1}
}
"""
ELEMENTWISE = """HloModule elementwise
ENTRY main {
  x = bf16[1003] parameter(0)
  y = f32[1003] parameter(1)
  c = f32[1003] convert(x)
  m = f32[1003] multiply(c, y)
  ROOT t = f32[1003] tanh(m)
}
"""
MLP = (
    "HloModule mlp\n"
    + REDUCERS
    + """
ENTRY main {
  a = f32[8,16] parameter(0)
  w = f32[16,40] parameter(1)
  d = f32[8,40] dot(a, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ninf = f32[] constant(-inf)
  mx = f32[8] reduce(d, ninf), dimensions={1}, to_apply=max_f
  mb = f32[8,40] broadcast(mx), dimensions={0}
  ROOT o = f32[8,40] subtract(d, mb)
}
"""
)


def _inputs(module, rng):
    out = []
    for p in module.entry.parameters:
        dt = p.shape.dtype.numpy
        values = rng.standard_normal(p.shape.dims) * 3
        if np.issubdtype(dt, np.integer):
            values = rng.integers(-1000, 1000, p.shape.dims)
        out.append(np.asarray(values).astype(dt))
    return out


def _check(text, warp, schedules, kind="accumulate", specials=False):
    """Compile for the simulator, run, compare with the suite's tolerance for ``kind``."""
    module = parse_module(text)
    rng = np.random.default_rng(7)
    args = _inputs(module, rng)
    if specials:
        flat = args[0].reshape(-1)
        flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    expected = flatten_value(evaluate(module, args))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(warp))
    assert [k.schedule for k in program.kernels] == schedules
    got = HostSimRunner(program).run(args)
    for g, e in zip(got, expected, strict=True):
        problem = describe_mismatch(g, np.asarray(e), kind)
        assert problem is None, problem


@pytest.mark.parametrize("warp", [32, 64])
def test_seed_row_reduction(warp):
    _check(SEED, warp, ["row_reduce"])


@pytest.mark.parametrize("warp", [32, 64])
def test_softmax_with_nan_and_infinities(warp):
    _check(SOFTMAX, warp, ["row_reduce"], specials=True)


def test_full_reduction_is_one_kernel_of_several_blocks():
    _check(FULL, 32, ["split_row_reduce"])


def test_few_long_rows_split_with_nan_and_an_epilogue():
    _check(FEW_LONG_ROWS, 64, ["split_row_reduce"], specials=True)


def test_rows_of_a_partly_used_block_and_a_non_identity_init():
    _check(SHORT_ROWS, 32, ["row_reduce"])


def test_column_reduction_one_thread_per_output():
    _check(COLUMNS, 32, ["loop"])


def test_tiled_transpose_of_a_ragged_batch():
    _check(TRANSPOSE, 32, ["transpose"], kind="bits")


def test_vectorized_elementwise_with_a_tail_and_mixed_widths():
    _check(ELEMENTWISE, 32, ["loop"], kind="transcendental")


def test_gemm_then_row_epilogue():
    _check(MLP, 32, ["row_reduce"])
