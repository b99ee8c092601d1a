"""Large float convolutions as im2col + gemm (im2col_schedule.py), on the host simulator:

- the size rule: a large f32/f16/bf16 layer with output features last in kernel and output is
  the im2col kernel and one gemm call (or the dot kernel without the library); small layers,
  feature groups, f64, and layouts with features elsewhere stay the direct kernel;
- with the dot kernel (no library), HWIO layers are bit for bit the direct kernel (same k order,
  same f32 arithmetic): strides, padding (negative too), base and window dilation, 1-3 spatial
  dimensions, an input laid out b f 0 1, f32 / f16 / bf16 (and an f32 result from bf16), NaN,
  inf and -0.0 in the input and an inf in the kernel (whose padding products are NaN);
- kernels whose k order is not the direct kernel's (i01o, window reversal) and the library
  gemm: against the interpreter under the conformance suite's ``accumulate`` tolerance;
- every conformance convolution case the rule admits once its thresholds are lowered, under
  ``accumulate`` (or the case's own kind for non-float results).

The thresholds are lowered (monkeypatch) so layers stay small enough to simulate."""

import ml_dtypes
import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu import im2col_schedule
from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.program import LibraryCall
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value, unflatten
from hlort.testing.comparison import describe_mismatch
from hlort.testing.op_case import all_cases
from hlort.text.parser import parse_module

NUMPY = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.fixture
def small_layers(monkeypatch):
    monkeypatch.setattr(im2col_schedule, "MIN_K", 1)
    monkeypatch.setattr(im2col_schedule, "MIN_MACS", 1)


def _text(t, x, w, y, window, labels, out_t=None):
    shape = lambda dims, tt=t: f"{tt}[{','.join(map(str, dims))}]"  # noqa: E731
    return f"""HloModule c
ENTRY main {{
  x = {shape(x)} parameter(0)
  w = {shape(w)} parameter(1)
  ROOT y = {shape(y, out_t or t)} convolution(x, w), window={{{window}}}, dim_labels={labels}
}}
"""


def _compile(text, gemm_library=False, im2col=True):
    module = parse_module(text)
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    if not im2col:
        saved, im2col_schedule.MIN_K = im2col_schedule.MIN_K, 1 << 62
    try:
        program = compile_gpu_program(
            module, HostSimTarget(32), host_loops=True, gemm_library=gemm_library
        )
    finally:
        if not im2col:
            im2col_schedule.MIN_K = saved
    assert not program.fallbacks, program.fallback_summary()
    return program


def _schedules(program):
    return [k.schedule for k in program.kernels]


def _inputs(t, x, w, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(x).astype(NUMPY[t]), rng.standard_normal(w).astype(NUMPY[t])]


def test_the_size_rule_at_its_real_thresholds():
    big = _text(
        "f32",
        (8, 32, 32, 64),
        (3, 3, 64, 64),
        (8, 32, 32, 64),
        "size=3x3 pad=1_1x1_1",
        "b01f_01io->b01f",
    )
    program = _compile(big, gemm_library=True)
    assert _schedules(program) == ["im2col"]
    (gemm,) = [s for s in program.steps if isinstance(s, LibraryCall)]
    assert (gemm.gemm.m, gemm.gemm.n, gemm.gemm.k) == (8 * 32 * 32, 64, 576)
    assert _schedules(_compile(big, gemm_library=False)) == ["im2col", "dot"]
    small = _text(
        "f32", (1, 8, 8, 4), (3, 3, 4, 4), (1, 8, 8, 4), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"
    )
    assert _schedules(_compile(small)) == ["convolution"]
    nchw = _text(
        "f32",
        (8, 64, 32, 32),
        (64, 64, 3, 3),
        (8, 64, 32, 32),
        "size=3x3 pad=1_1x1_1",
        "bf01_oi01->bf01",
    )
    assert _schedules(_compile(nchw)) == ["convolution"]
    wide = big.replace("f32", "f64")
    assert _schedules(_compile(wide)) == ["convolution"]


def test_feature_groups_stay_direct(small_layers):
    text = _text("f32", (2, 6, 6, 8), (3, 3, 4, 8), (2, 4, 4, 8), "size=3x3", "b01f_01io->b01f")
    text = text.replace("dim_labels=", "feature_group_count=2, dim_labels=")
    assert _schedules(_compile(text)) == ["convolution"]


HWIO = [
    ("f32", (2, 9, 9, 5), (3, 3, 5, 7), (2, 9, 9, 7), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"),
    ("f32", (2, 11, 10, 3), (3, 2, 3, 4), (2, 5, 5, 4), "size=3x2 stride=2x2", "b01f_01io->b01f"),
    (
        "f32",
        (1, 7, 7, 3),
        (3, 3, 3, 2),
        (1, 9, 11, 2),
        "size=3x3 pad=-1_-1x0_0 lhs_dilate=2x2",
        "b01f_01io->b01f",
    ),
    ("f32", (2, 9, 9, 2), (3, 3, 2, 3), (2, 5, 5, 3), "size=3x3 rhs_dilate=2x2", "b01f_01io->b01f"),
    ("f32", (3, 20, 4), (5, 4, 6), (3, 18, 6), "size=5 pad=1_1", "b0f_0io->b0f"),
    ("f32", (1, 5, 4, 6, 2), (2, 2, 3, 2, 3), (1, 4, 3, 4, 3), "size=2x2x3", "b012f_012io->b012f"),
    ("f32", (2, 3, 8, 8), (3, 3, 3, 4), (2, 8, 8, 4), "size=3x3 pad=1_1x1_1", "bf01_01io->b01f"),
    ("f16", (2, 8, 8, 6), (3, 3, 6, 5), (2, 6, 6, 5), "size=3x3", "b01f_01io->b01f"),
    ("bf16", (2, 8, 8, 6), (3, 3, 6, 5), (2, 8, 8, 5), "size=3x3 pad=1_1x1_1", "b01f_01io->b01f"),
]


@pytest.mark.parametrize("t,x,w,y,window,labels", HWIO)
def test_hwio_layers_are_the_direct_kernel_bit_for_bit(small_layers, t, x, w, y, window, labels):
    text = _text(t, x, w, y, window, labels)
    args = _inputs(t, x, w, seed=len(x))
    flat = args[0].reshape(-1)
    flat[::17], flat[5::23], flat[7::29] = np.nan, np.inf, -0.0
    args[1].reshape(-1)[3] = -np.inf  # its padding products are NaN, as in the direct kernel
    program = _compile(text)
    assert _schedules(program) == ["im2col", "dot"]
    (got,) = HostSimRunner(program).run(args)
    (direct,) = HostSimRunner(_compile(text, im2col=False)).run(args)
    assert got.tobytes() == direct.tobytes()


def test_an_f32_result_from_bf16_operands(small_layers):
    text = _text(
        "bf16", (2, 6, 6, 8), (3, 3, 8, 4), (2, 4, 4, 4), "size=3x3", "b01f_01io->b01f", out_t="f32"
    )
    args = _inputs("bf16", (2, 6, 6, 8), (3, 3, 8, 4))
    program = _compile(text)
    assert _schedules(program) == ["im2col", "dot"]
    (got,) = HostSimRunner(program).run(args)
    (direct,) = HostSimRunner(_compile(text, im2col=False)).run(args)
    assert got.dtype == np.float32 and got.tobytes() == direct.tobytes()


OTHER_ORDERS = [
    ("f32", (2, 9, 9, 5), (5, 3, 3, 7), (2, 7, 7, 7), "size=3x3", "b01f_i01o->b01f"),
    (
        "f32",
        (2, 9, 9, 5),
        (3, 3, 5, 7),
        (2, 9, 9, 7),
        "size=3x3 pad=1_1x1_1 rhs_reversal=1x1",
        "b01f_01io->b01f",
    ),
    ("f16", (2, 8, 8, 6), (3, 3, 6, 5), (2, 6, 6, 5), "size=3x3", "b01f_01io->b01f"),
]


@pytest.mark.parametrize("gemm_library", [False, True])
@pytest.mark.parametrize("t,x,w,y,window,labels", OTHER_ORDERS)
def test_other_orders_and_the_library_within_accumulate(
    small_layers, gemm_library, t, x, w, y, window, labels
):
    text = _text(t, x, w, y, window, labels)
    args = _inputs(t, x, w, seed=3)
    (expected,) = flatten_value(evaluate(parse_module(text), args))
    program = _compile(text, gemm_library=gemm_library)
    assert _schedules(program)[0] == "im2col"
    (got,) = HostSimRunner(program).run(args)
    problem = describe_mismatch(got, np.asarray(expected), "accumulate")
    assert problem is None, problem


def _admitted(case) -> bool:
    from hlort.codegen.gpu.conv_schedule import plan_convolution

    conv = next(i for i in case.module.entry.instructions if i.opcode.value == "convolution")
    plan, _ = plan_convolution(conv)
    return plan is not None and im2col_schedule.plan_im2col(plan)[0] is not None


CASES = [c for c in all_cases() if c.op == "convolution"]


@pytest.mark.parametrize("gemm_library", [False, True])
def test_conformance_cases_the_rule_admits(small_layers, gemm_library):
    admitted = [c for c in CASES if _admitted(c)]
    assert len(admitted) >= 6, [c.id for c in admitted]  # f16/bf16/f32 basic, strided-padded
    for case in admitted:
        args = case.inputs()
        shapes = [p.shape for p in case.module.entry.parameters]
        expected = flatten_value(evaluate(case.module, unflatten(shapes, args)))
        module = case.module.clone()
        run_default_pipeline(module, policy=gpu_pass_options().policy)
        target = HostSimTarget(32)
        program = compile_gpu_program(module, target, host_loops=True, gemm_library=gemm_library)
        assert not program.fallbacks, program.fallback_summary()
        assert "im2col" in _schedules(program), case.id
        got = HostSimRunner(program).run(args)
        for g, e in zip(got, expected, strict=True):
            kind = "accumulate" if np.asarray(e).dtype.kind in "fc" else case.kind
            problem = describe_mismatch(g, np.asarray(e), kind, what=case.id)
            assert problem is None, problem
