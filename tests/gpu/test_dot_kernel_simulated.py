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
        dt, dims = p.shape.dtype.numpy, p.shape.dims
        if dt == np.bool_:
            values = rng.integers(0, 2, dims)
        elif np.issubdtype(dt, np.integer):
            info = np.iinfo(dt)
            values = rng.integers(max(info.min, -(1 << 20)), min(info.max, 1 << 20), dims)
        elif np.issubdtype(dt, np.complexfloating):
            values = (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)) * 2
        else:
            values = rng.standard_normal(dims) * 2
        arr = np.asarray(values).astype(dt)
        if specials and arr.dtype.kind in "fVc" and arr.size >= 6:
            flat = arr.reshape(-1)
            flat[[0, arr.size // 2, arr.size - 1]] = [np.nan, np.inf, -0.0]
            flat[arr.size // 3] = -np.inf
            if arr.dtype.kind == "c":  # specials in the imaginary parts too, and -0 - 0i
                flat[1] = complex(flat[1].real, np.nan)
                flat[arr.size // 4] = complex(flat[arr.size // 4].real, -np.inf)
                flat[arr.size - 1] = complex(-0.0, -0.0)
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
        kind = "bits" if dot.shape.dtype.is_integer or dot.shape.dtype.is_pred else "accumulate"
        if k <= 64 or dot.shape.dtype.is_complex:  # summed in k order by the interpreter
            kind = "exact" if dot.shape.dtype.is_complex else "bits"
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
    ("s32", "s32", "f32"),  # integers into a float (JAX's preferred_element_type): f32 sums
    ("s8", "s8", "bf16"),
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


COMPLEX_AND_PRED = [  # (lhs, rhs, out)
    ("c64", "c64", "c64"),
    ("c128", "c128", "c128"),
    ("c64", "f32", "c64"),  # the real operand converted to complex (+0i) first
    ("f64", "c64", "c128"),  # f64 involved: summed in c128
    ("s32", "c64", "c64"),
    ("pred", "pred", "pred"),  # OR of ANDs
    ("pred", "pred", "s32"),  # counts the true products
    ("pred", "pred", "f32"),
    ("pred", "s8", "s32"),
]


@pytest.mark.parametrize("lt,rt,ot", COMPLEX_AND_PRED, ids=["x".join(t) for t in COMPLEX_AND_PRED])
def test_complex_and_pred_element_types(lt, rt, ot):
    """Complex results are compared exactly (every non-NaN bit; NaN against any NaN: LLVM, and
    PTX, define no NaN payload or sign): the kernel sums the naive products in k order as the
    interpreter does, for any K."""
    check_dot(dot_module((33, 40), (40, 18), (33, 18), MK_KN, lt, rt, ot), specials=True)


@pytest.mark.parametrize("dtype", ["c64", "pred"])
def test_complex_and_pred_over_several_tiles_k_steps_and_a_64_wide_wavefront(dtype):
    dims = (
        "lhs_batch_dims={1}, lhs_contracting_dims={0}, rhs_batch_dims={0}, rhs_contracting_dims={2}"
    )
    text = dot_module((100, 2, 70), (2, 66, 100), (2, 70, 66), dims, dtype)
    check_dot(text, warp=64, specials=True)


@pytest.mark.parametrize("dtype", ["c128", "pred"])
def test_complex_and_pred_with_empty_k_store_zeros(dtype):
    check_dot(dot_module((3, 0), (0, 5), (3, 5), MK_KN, dtype), one_kernel=False)


def test_all_false_and_single_true_pred_products():
    module = parse_module(dot_module((4, 40), (40, 3), (4, 3), MK_KN, "pred"))
    a = np.zeros((4, 40), bool)
    b = np.ones((40, 3), bool)
    a[1, 39] = a[2, 0] = True  # one true product per output of rows 1 and 2
    a[3] = True  # 40 true products: still just true
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), gemm_library=False)
    got = HostSimRunner(program).run([a, b])[0]
    assert got.dtype == np.bool_
    assert got.tolist() == [[False] * 3, [True] * 3, [True] * 3, [True] * 3]


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_with_a_blas_library_complex_dots_are_complex_gemm_calls(dtype):
    """cgemm / zgemm past K = 64: the LibraryCall's spec (types, transposes, complex compute)
    run by the simulator's reference gemm, against the interpreter under the "accumulate"
    tolerance; up to K = 64 the kernel sums in order, bit for bit, library or not."""
    from hlort.codegen.gpu.program import LibraryCall

    dims = "lhs_contracting_dims={0}, rhs_contracting_dims={1}"
    short = parse_module(dot_module((64, 30), (25, 64), (30, 25), dims, dtype))
    run_default_pipeline(short, policy=gpu_pass_options().policy)
    in_order = compile_gpu_program(short, HostSimTarget(32), gemm_library=True)
    assert [k.schedule for k in in_order.kernels] == ["dot"] and not in_order.fallbacks
    module = parse_module(dot_module((80, 30), (25, 80), (30, 25), dims, dtype))
    args = _inputs(module, np.random.default_rng(5), specials=False)
    expected = flatten_value(evaluate(module, args))[0]
    run_default_pipeline(module, policy=gpu_pass_options().policy)
    program = compile_gpu_program(module, HostSimTarget(32), gemm_library=True)
    (call,) = [s for s in program.steps if isinstance(s, LibraryCall)]
    g = call.gemm
    assert (g.dtype_a, g.dtype_b, g.dtype_c, g.compute_dtype) == (dtype,) * 4
    assert g.transpose_a and g.transpose_b and not program.kernels
    got = HostSimRunner(program).run(args)[0]
    problem = describe_mismatch(got, np.asarray(expected), "accumulate")
    assert problem is None, problem
