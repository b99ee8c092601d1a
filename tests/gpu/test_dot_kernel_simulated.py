"""hlort's tiled dot kernel (dot_schedule.py) against the reference interpreter on the host
simulator (one OS thread per GPU thread, real barriers), compiled as for a runtime without a
BLAS library (``gemm_library=False``): shapes (1, non-multiples of the 64 x 64 tile and of the
16-wide k-step, K = 0, several tiles), element types (f32, f64, f16, bf16 accumulating in f32;
s8 -> s32 and s32 wrapping; u8; mixed s32 x f32), dimension numbers (either operand transposed,
batch dimensions not leading, several contracting and free dimensions), NaN, infinities and
-0.0 in the inputs, warp sizes 32 and 64.

Tolerances: integer results are compared bit for bit ("bits"); float results too when K <= 64,
where the interpreter sums in k order from +0 with each product rounded, exactly as the kernel
does; longer float contractions (the interpreter uses BLAS there) use the suite's "accumulate"
tolerance."""

import numpy as np
import pytest
from host_simulator import HostSimRunner, HostSimTarget

from hlort.codegen.gpu.compiler import compile_gpu_program, gpu_pass_options
from hlort.codegen.gpu.dot_plan import plan_dot
from hlort.interpreter.evaluator import evaluate
from hlort.passes.default_pipeline import run_default_pipeline
from hlort.plugin.base.value_flattening import flatten_value
from hlort.testing.comparison import describe_mismatch
from hlort.text.parser import parse_module


def dot_module(lhs, rhs, out, dims, lt="f32", rt=None, ot=None):
    """A one-dot module; ``dims`` is the dot's dimension-number text."""
    rt, ot = rt or lt, ot or lt
    sl = ",".join(map(str, lhs))
    sr = ",".join(map(str, rhs))
    so = ",".join(map(str, out))
    return f"""HloModule dot
ENTRY main {{
  a = {lt}[{sl}] parameter(0)
  b = {rt}[{sr}] parameter(1)
  ROOT d = {ot}[{so}] dot(a, b), {dims}
}}
"""


MK_KN = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"


def _inputs(module, rng, specials):
    out = []
    for p in module.entry.parameters:
        dt = p.shape.dtype.numpy
        if np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            values = rng.integers(max(info.min, -(1 << 20)), min(info.max, 1 << 20), p.shape.dims)
        else:
            values = rng.standard_normal(p.shape.dims) * 2
        arr = np.asarray(values).astype(dt)
        if specials and not np.issubdtype(dt, np.integer) and arr.size >= 6:
            flat = arr.reshape(-1)
            flat[[0, arr.size // 2, arr.size - 1]] = [np.nan, np.inf, -0.0]
            flat[arr.size // 3] = -np.inf
        out.append(arr)
    return out


def check_dot(text, warp=32, specials=False, kind=None, one_kernel=True):
    """Compile, run, compare; the optimized module's dot must be one "dot" kernel, unless
    ``one_kernel`` is False (the simplifier turns a dot of one product into a multiply)."""
    module = parse_module(text)
    dot = module.entry.root
    k = plan_dot(dot)[0].k
    args = _inputs(module, np.random.default_rng(11), specials)
    expected = flatten_value(evaluate(module, args))
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(warp), gemm_library=False)
    if one_kernel:
        assert [info.schedule for info in program.kernels] == ["dot"]
    assert program.fallbacks == []
    got = HostSimRunner(program).run(args)
    if kind is None:
        kind = "bits" if dot.shape.dtype.is_integer or k <= 64 else "accumulate"
    for g, e in zip(got, expected, strict=True):
        problem = describe_mismatch(g, np.asarray(e), kind)
        assert problem is None, problem


SHAPES = [  # (M, K, N)
    (1, 1, 1),
    (1, 7, 1),
    (3, 5, 2),
    (64, 16, 64),
    (65, 17, 63),
    (5, 0, 7),
    (130, 33, 70),
    (2, 100, 3),
]


@pytest.mark.parametrize("m,k,n", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_shapes_f32(m, k, n):
    check_dot(dot_module((m, k), (k, n), (m, n), MK_KN), one_kernel=(m, k, n) != (1, 1, 1))


@pytest.mark.parametrize("warp", [32, 64])
def test_nan_infinities_and_negative_zero(warp):
    check_dot(dot_module((9, 20), (20, 11), (9, 11), MK_KN), warp=warp, specials=True)


def test_negative_zero_products_sum_to_positive_zero():
    text = dot_module((2, 1), (1, 2), (2, 2), MK_KN)
    module = parse_module(text)
    args = [np.full((2, 1), -0.0, np.float32), np.ones((1, 2), np.float32)]
    expected = flatten_value(evaluate(module, args))[0]
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), gemm_library=False)
    got = HostSimRunner(program).run(args)[0]
    assert np.array_equal(np.signbit(got), np.signbit(expected))


DTYPES = [  # (lhs, rhs, out)
    ("f64", "f64", "f64"),
    ("f16", "f16", "f16"),
    ("bf16", "bf16", "bf16"),
    ("bf16", "bf16", "f32"),
    ("s8", "s8", "s32"),
    ("s32", "s32", "s32"),
    ("u8", "u8", "u32"),
    ("s32", "f32", "f32"),
]


@pytest.mark.parametrize("lt,rt,ot", DTYPES, ids=["x".join(t) for t in DTYPES])
def test_element_types(lt, rt, ot):
    check_dot(dot_module((33, 40), (40, 18), (33, 18), MK_KN, lt, rt, ot), specials=True)


def test_s32_sums_wrap_around():
    module = parse_module(dot_module((2, 3), (3, 2), (2, 2), MK_KN, "s32"))
    big = np.full((2, 3), 2**30 + 7, np.int32)
    args = [big, np.full((3, 2), 5, np.int32)]
    expected = flatten_value(evaluate(module, args))[0]
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), gemm_library=False)
    assert np.array_equal(HostSimRunner(program).run(args)[0], expected)


LAYOUTS = [
    # lhs transposed (k, m) and rhs (n, k)
    ((20, 30), (25, 20), (30, 25), "lhs_contracting_dims={0}, rhs_contracting_dims={1}"),
    # batch leading, as jnp.matmul
    (
        (3, 17, 21),
        (3, 21, 9),
        (3, 17, 9),
        "lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, "
        "rhs_contracting_dims={1}",
    ),
    # batch dims not leading, in another position on each side
    (
        (7, 2, 5),
        (6, 5, 2),
        (2, 7, 6),
        "lhs_batch_dims={1}, lhs_contracting_dims={2}, rhs_batch_dims={2}, "
        "rhs_contracting_dims={1}",
    ),
    # two contracting dims paired out of order, two free dims on the lhs
    (
        (4, 3, 6, 5),
        (5, 8, 6),
        (4, 3, 8),
        "lhs_contracting_dims={3,2}, rhs_contracting_dims={0,2}",
    ),
    # a vector dot: no free dims at all
    ((70,), (70,), (), "lhs_contracting_dims={0}, rhs_contracting_dims={0}"),
    # an outer product: no contracting dims
    ((5,), (3,), (5, 3), "lhs_contracting_dims={}, rhs_contracting_dims={}"),
]


@pytest.mark.parametrize("lhs,rhs,out,dims", LAYOUTS, ids=[str(i) for i in range(len(LAYOUTS))])
def test_dimension_numbers(lhs, rhs, out, dims):
    check_dot(dot_module(lhs, rhs, out, dims), specials=True, one_kernel=bool(lhs) and lhs != (5,))


def test_many_tiles_with_a_batch_and_a_64_wide_wavefront():
    dims = (
        "lhs_batch_dims={0}, lhs_contracting_dims={1}, rhs_batch_dims={0}, rhs_contracting_dims={1}"
    )
    check_dot(dot_module((2, 80, 130), (2, 80, 67), (2, 130, 67), dims), warp=64)
