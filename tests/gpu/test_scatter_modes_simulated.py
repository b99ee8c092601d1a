"""Each GPU scatter mode (scatter_schedule.py) on the host simulator against the interpreter,
with duplicate targets, out-of-bounds rows (skipped) and windows: integer atomics, float add
(within rounding: the atomics' order), CAS loops (multiply, float max), unique indices, the
overwrite mode's last-update-wins (bit for bit: the order matters there), and serial walks."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.scatter_schedule import plan_scatter
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.gpu_scatter_programs import SCATTER_MODES, scatter_inputs, scatter_program
from hlort.text.parser import parse_module


@pytest.mark.parametrize("warp", [32, 64])
@pytest.mark.parametrize("comb,t,unique,mode", SCATTER_MODES)
def test_scatter_mode_matches_the_interpreter(comb, t, unique, mode, warp):
    module = parse_module(scatter_program(comb, t, unique))
    args = scatter_inputs(t, unique)
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    scatter = module.entry.root
    assert plan_scatter(scatter)[0].mode == mode
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    prog = compile_gpu_program(optimized, HostSimTarget(warp))
    assert not prog.fallbacks, prog.fallbacks
    assert [k.schedule for k in prog.kernels] == [f"scatter_{mode}"] * (
        3 if mode == "overwrite" else 1
    )
    got = HostSimRunner(prog).run(args)[0]
    if comb in ("add", "mul") and t in ("f32", "f64") and not unique:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    else:
        assert got.tobytes() == expected.tobytes(), (got, expected)


def test_a_variadic_overwrite_keeps_the_last_update_of_each_target():
    text = """HloModule v
comb {
  a = f32[] parameter(0)
  b = s32[] parameter(1)
  c = f32[] parameter(2)
  d = s32[] parameter(3)
  ROOT r = (f32[], s32[]) tuple(c, d)
}
ENTRY main {
  x = f32[9] parameter(0)
  y = s32[9] parameter(1)
  i = s32[300,1] parameter(2)
  u = f32[300] parameter(3)
  v = s32[300] parameter(4)
  ROOT s = (f32[9], s32[9]) scatter(x, y, i, u, v), update_window_dims={}, \
inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, to_apply=comb
}
"""
    module = parse_module(text)
    rng = np.random.default_rng(3)
    args = [
        rng.normal(size=9).astype(np.float32),
        np.arange(9, dtype=np.int32),
        rng.integers(0, 11, (300, 1)).astype(np.int32),
        rng.normal(size=300).astype(np.float32),
        np.arange(300, dtype=np.int32),
    ]
    expected = [np.asarray(v) for v in flatten_value(evaluate(module, args))]
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    prog = compile_gpu_program(optimized, HostSimTarget(32))
    assert not prog.fallbacks and prog.kernels[0].schedule == "scatter_overwrite"
    got = HostSimRunner(prog).run(args)
    for g, e in zip(got, expected, strict=True):
        assert g.tobytes() == e.tobytes()


@pytest.mark.parametrize("rows", [0, 4])
def test_an_empty_scatter_leaves_the_operand(rows):
    text = f"""HloModule e
comb {{
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}}
ENTRY main {{
  x = f32[{4 - rows},3] parameter(0)
  i = s32[{rows},1] parameter(1)
  u = f32[{rows},3] parameter(2)
  ROOT s = f32[{4 - rows},3] scatter(x, i, u), update_window_dims={{1}}, \
inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, index_vector_dim=1, to_apply=comb
}}
"""
    module = parse_module(text)
    args = [
        np.ones((4 - rows, 3), np.float32),
        np.zeros((rows, 1), np.int32),
        np.full((rows, 3), 2, np.float32),
    ]
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    prog = compile_gpu_program(optimized, HostSimTarget(32))
    assert not prog.fallbacks
    (got,) = HostSimRunner(prog).run(args)
    assert got.tobytes() == expected.tobytes()
