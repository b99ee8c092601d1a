"""Reduce-windows of narrow floats and complex numbers on the GPU loop schedule (host
simulator) against the interpreter, bit for bit: the window loop folds with the inlined reducer,
whose f16/bf16/float8 ops round after every step as the interpreter's fold does, so cumulative
sums (JAX's cumsum lowering, a long padded window) match exactly; no host fallback, and every
conformance reduce-window case runs on the kernel."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

CUMSUM = """HloModule cumsum
add {{
  a = {t}[] parameter(0)
  b = {t}[] parameter(1)
  ROOT c = {t}[] {op}(a, b)
}}
ENTRY main {{
  x = {t}[3,200] parameter(0)
  z = {t}[] constant({init})
  ROOT r = {t}[3,200] reduce-window(x, z), window={{size=1x200 pad=0_0x199_0}}, to_apply=add
}}
"""


def _compile(module):
    optimized = module.clone()
    run_default_pipeline(optimized, policy=gpu_pass_options().policy)
    return compile_gpu_program(optimized, HostSimTarget(32))


@pytest.mark.parametrize(
    "t,op,init",
    [
        ("f16", "add", 0),
        ("bf16", "add", 0),
        ("f8e5m2", "maximum", -1),
        ("c64", "multiply", "(1, 0)"),
    ],
)
def test_narrow_and_complex_window_folds_match_bit_for_bit(t, op, init):
    module = parse_module(CUMSUM.format(t=t, op=op, init=init))
    rng = np.random.default_rng(1)
    dt = module.entry.parameters[0].shape.dtype.numpy
    x = rng.normal(size=(3, 200)) * 3
    if t == "c64":
        x = np.exp(1j * x) * (1 + rng.normal(size=(3, 200)) * 1e-3)
    args = [x.astype(dt)]
    expected = np.asarray(flatten_value(evaluate(module, args))[0])
    program = _compile(module)
    assert not program.fallbacks, program.fallbacks
    (got,) = HostSimRunner(program).run(args)
    assert got.tobytes() == expected.tobytes()


CASES = [c for c in all_cases() if c.op == "reduce-window"]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_reduce_window_case_runs_on_the_kernel(case):
    args = case.inputs()
    shapes = [p.shape for p in case.module.entry.parameters]
    expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
    program = _compile(case.module)
    assert not program.fallbacks, program.fallbacks
    got = HostSimRunner(program).run(args)
    for k, (g, e) in enumerate(zip(got, expected, strict=True)):
        problem = describe_mismatch(g, np.asarray(e), case.kind, what=f"output {k}")
        assert problem is None, problem
