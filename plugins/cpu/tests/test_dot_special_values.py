"""Every dot path of the cpu plugin against the interpreter with NaN, +-inf, -0.0 and subnormals
in both operands (special_dots.py: crafted rows and columns that make inf * 0, inf - inf, NaN
rows, sums of -0.0 products and subnormal products, or the same values at random places).

Tolerance, stated (special_dots.assert_exactly_special): NaN at the same places and the same
infinities, per real and imaginary part; the same sign of every zero; integers bit for bit;
finite elements within ``2 (K + 2) eps(acc) sum |a b| + eps(result) |ref|`` plus three
subnormals of the result type (summation order only). No values near the overflow threshold
(fma and order change which sums overflow; see test_small_dot.py). Each case also asserts the
path it ran (the stats label), so a path that stops being taken is noticed.

The complex BLAS cases (K > 64) failed before ``ContractionArithmetic.repair``: complex gemm
made every infinite sum ``NaN + NaN i`` (951 NaN elements where the interpreter has 321 in the
c64 [64, 512] x [256, 512] case) and left -0.0 parts where the interpreter's sums are +0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("llvmlite")
# NaN and infinities are these dots' inputs: NumPy warnings from inside hlort must not reach users
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")
from dot_run import dot_module, dot_values  # noqa: E402
from special_dots import assert_exactly_special, special_operands  # noqa: E402

import hlort  # noqa: E402
from hlort import dtypes  # noqa: E402
from hlort.ir.attributes import DotDimensionNumbers as Dn  # noqa: E402
from hlort_cpu import dot_split, narrow_dot, small_dot, thread_pool  # noqa: E402
from hlort_cpu.step_groups import DOT, StepGroup  # noqa: E402

MATMUL = Dn((1,), (0,))
BATCHED = Dn((2,), (1,), (0,), (0,))
PATHS = [  # (id, element types, (lhs dims, rhs dims, dn), setting, the label it must run)
    ("blas", "f32 f64", ((20, 30), (30, 20), MATMUL), None, "dot (BLAS)"),
    ("blas-split", "f32 f64", ((64, 512), (512, 256), MATMUL), "split", "dot (BLAS)"),
    ("blas-whole", "f32 f64", ((64, 512), (512, 256), MATMUL), "whole", "dot (BLAS)"),
    ("blas-batch", "f32 f64", ((3, 6, 9), (3, 9, 7), BATCHED), None, "dot (BLAS)"),
    ("blas-batch-split", "f32", ((4, 64, 512), (4, 512, 64), BATCHED), "split", "dot (BLAS)"),
    ("blas-rhs-t", "f32 f64", ((40, 20), (30, 20), Dn((1,), (1,))), None, "dot (BLAS)"),
    ("transposed", "f32", ((8, 512), (512, 512), Dn((1,), (1,))), None, "dot (BLAS, transposed)"),
    ("narrow", "f32 f64", ((37, 100), (100, 3), MATMUL), "narrow", "dot (narrow)"),
    ("narrow-full", "f32", ((256, 1024), (1024, 10), MATMUL), None, "dot (narrow)"),
    ("small", "f32 f64", ((64, 9), (9, 200), MATMUL), "small", "dot (small matmul)"),
    ("small-tails", "f32 f64", ((13, 37), (37, 29), MATMUL), "small", "dot (small matmul)"),
    ("small-batch", "f32 f64", ((3, 6, 9), (3, 9, 7), BATCHED), "small", "dot (small matmul)"),
    ("small-k-deep", "f32", ((128, 512), (512, 10), MATMUL), None, "dot (small matmul)"),
    ("half", "f16 bf16", ((64, 100), (100, 32), MATMUL), None, "dot (BLAS)"),
    ("half-short", "f16 bf16", ((6, 9), (9, 7), MATMUL), None, "dot (BLAS)"),
    ("complex-ordered", "c64 c128", ((8, 9), (9, 8), MATMUL), None, "dot (complex, in order)"),
    (
        "complex-ordered-batch",
        "c64",
        ((3, 6, 9), (3, 9, 7), BATCHED),
        None,
        "dot (complex, in order)",
    ),
    ("complex-blas", "c64 c128", ((4, 100), (100, 6), MATMUL), None, "dot (BLAS)"),
    ("complex-blas-rhs-t", "c64", ((64, 512), (256, 512), Dn((1,), (1,))), None, "dot (BLAS)"),
    ("complex-blas-split", "c128", ((64, 512), (512, 256), MATMUL), "split", "dot (BLAS)"),
    ("complex-blas-batch", "c64", ((2, 5, 100), (2, 100, 6), BATCHED), None, "dot (BLAS)"),
    ("int64", "s32 s64 u32", ((6, 9), (9, 7), MATMUL), None, "dot (int64 matmul)"),
    (
        "int-via-f32",
        "s8 u8 pred",
        ((6, 9), (9, 7), MATMUL),
        None,
        "dot (BLAS float32, exact integers)",
    ),
    (
        "int-via-f64",
        "u8",
        ((64, 300), (300, 16), MATMUL),
        None,
        "dot (BLAS float64, exact integers)",
    ),
    ("empty-k", "f32 c64 s32", ((4, 0), (0, 5), MATMUL), None, None),
    ("vector", "f32 f64 c64", ((7,), (7,), Dn((0,), (0,))), None, None),
    ("one-by-one", "f32 c64", ((1, 1), (1, 1), MATMUL), None, None),
    ("k-one", "f32 f64", ((16, 1), (1, 16), MATMUL), None, None),
]


def _has_specials(name: str) -> bool:
    """Integers and pred have no NaN, infinity or -0.0: they get the crafted case only."""
    dt = dtypes.from_hlo_name(name)
    return dt.is_float or dt.is_complex


CASES = [
    pytest.param(dtype, case, setting, label, spread, id=f"{name}-{dtype}-{mode}")
    for name, types, case, setting, label in PATHS
    for dtype in types.split()
    for spread, mode in ((False, "crafted"), (True, "spread"))
    if _has_specials(dtype) or not spread
]


@pytest.fixture
def setting(request, monkeypatch):
    """Apply a case's setting: the pool split on (2 workers) or off, the narrow or small
    kernel's size rule lowered; no compiled program is cached under a changed rule."""
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(dot_split, "_PLANS", {})
    monkeypatch.setattr(dot_split, "_WHOLE", {})
    value = request.param
    if value in ("split", "whole"):
        workers = 2 if value == "split" else 1
        monkeypatch.setattr(dot_split, "worker_count", lambda: workers)
        monkeypatch.setattr(thread_pool, "worker_count", lambda: workers)
    if value == "narrow":
        monkeypatch.setattr(narrow_dot, "MIN_PRODUCTS", 1)
        monkeypatch.setattr(narrow_dot, "POOL_MIN_PRODUCTS", 1)
    if value == "small":
        monkeypatch.setattr(small_dot, "SMALL_DOT_MIN_PRODUCTS", 1)
    return value


def _operands(dtype, case, spread: bool):
    if not spread:
        return special_operands(dtype, case, seed=13)
    rng = np.random.default_rng(17)
    dt = dtypes.from_hlo_name(dtype)
    return [dot_values(dt, case[0], rng, True), dot_values(dt, case[1], rng, True)]


@pytest.mark.parametrize(
    ("dtype", "case", "setting", "label", "spread"), CASES, indirect=["setting"]
)
def test_special_values_match_the_interpreter(dtype, case, setting, label, spread):
    module = dot_module(dtype, *case)
    args = _operands(dtype, case, spread)
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(*args))
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    if label is not None:
        assert stats["compiled"] == {label: 1}, stats
    k = math.prod(case[0][d] for d in case[2].lhs_contracting_dims)
    assert_exactly_special(module, args, got, k)


TYPED = [  # lhs, rhs, preferred result type (None: the operands')
    ("f8e4m3fn", "f8e4m3fn", None),  # no infinities: inf becomes NaN
    ("f8e5m2", "f8e5m2", None),
    ("bf16", "bf16", "f32"),
    ("f32", "f32", "f64"),
    ("f32", "f32", "bf16"),
    ("c64", "c64", "c128"),
]


@pytest.mark.parametrize(
    "case", [((6, 9), (9, 7), MATMUL), ((64, 100), (100, 32), MATMUL)], ids=str
)
@pytest.mark.parametrize(("lhs", "rhs", "preferred"), TYPED, ids=str)
def test_float8_and_preferred_types_keep_the_special_values(lhs, rhs, preferred, case):
    from hlort import Builder, shape

    b = Builder("dot")
    x = b.parameter(shape.array(lhs, list(case[0])))
    y = b.parameter(shape.array(rhs, list(case[1])))
    module = b.build(b.dot_general(x, y, case[2], preferred=preferred))
    args = [special_operands(lhs, case, seed=2)[0], special_operands(rhs, case, seed=3)[1]]
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    assert_exactly_special(module, args, np.asarray(exe(*args)), case[0][1])


TWO_DOTS = """HloModule two_dots
ENTRY e {
  a = DT[64,128] parameter(0)
  b = DT[128,256] parameter(1)
  c = DT[64,128] parameter(2)
  d = DT[128,256] parameter(3)
  x = DT[64,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  y = DT[64,256] dot(c, d), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (DT[64,256], DT[64,256]) tuple(x, y)
}
"""


@pytest.mark.parametrize("dtype", ["f32", "c64"])
def test_dots_grouped_side_by_side_keep_the_special_values(dtype, monkeypatch):
    """Two independent heavy dots run in one step group (their gemm chunks on the pool,
    DotThunk.native_parts / finish_parts): the same special-value rule as alone."""
    monkeypatch.setenv("HLORT_CPU_THREADS", "2")
    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(dot_split, "_PLANS", {})
    monkeypatch.setattr(dot_split, "_WHOLE", {})
    text = TWO_DOTS.replace("DT", dtype)
    exe = hlort.compile(text, "cpu")
    groups = [s for s, _ in exe.raw.program.schedule if isinstance(s, StepGroup)]
    assert [[m.group_kind for m in g.members] for g in groups] == [[DOT, DOT]]
    case = ((64, 128), (128, 256), MATMUL)
    args = [*special_operands(dtype, case, seed=3), *special_operands(dtype, case, seed=4)]
    got = exe(*args)
    single = dot_module(dtype, *case)
    for out, pair in zip(got, (args[:2], args[2:]), strict=True):
        assert_exactly_special(single, pair, np.asarray(out), 128)


CONVS = {  # id: Conv arguments (3x3 window, padding 1: inf meets padded zeros)
    "im2col": dict(features=16, out_features=16),  # K 144: complex takes BLAS
    "groups": dict(features=32, out_features=16, groups=2),
    "batch-groups": dict(features=16, out_features=16, batch_groups=2),
    "depthwise": dict(features=16, out_features=16, groups=16),  # K 9
    "split": dict(batch=8, features=16, out_features=32, spatial=(16, 16)),  # 9.4M products
}


@pytest.mark.parametrize("type_name", ["f32", "f64", "f16", "c64", "c128"])
@pytest.mark.parametrize("name", sorted(CONVS))
def test_convolutions_keep_the_special_values(name, type_name, monkeypatch):
    """Convolution (im2col + BLAS, the depthwise sum, complex in order or by BLAS) with NaN,
    +-inf, a batch of -0.0 against positive kernel columns, and a zero kernel column: the
    same exact rule as the dots (the complex BLAS ones failed before the repair)."""
    from conv_cases import Conv, window

    monkeypatch.setenv("HLORT_CACHE", "0")
    monkeypatch.setattr(dot_split, "worker_count", lambda: 2)
    monkeypatch.setattr(thread_pool, "worker_count", lambda: 2)
    monkeypatch.setattr(dot_split, "_PLANS", {})
    settings = dict(batch=4, spatial=(6, 5)) | CONVS[name]
    conv = Conv(
        types=(type_name, type_name), window=window([3, 3], padding=[(1, 1)] * 2), **settings
    )
    module = conv.module()
    x, w = conv.inputs(np.random.default_rng(8))
    x[0, 0, 0, 0], x[1, 3, 2, 1] = np.nan, np.inf
    x[0, 4, 4, :] = -np.inf
    x[2] = -0.0
    w[..., 2] = np.abs(w[..., 2]) + 1
    w[1, 1, :, 3] = 0.0
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(x, w))
    assert exe.raw.stats()["fallback_count"] == 0
    assert_exactly_special(module, [x, w], got, conv.k)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("layout", ["row_major", "tails", "batched", "rhs_transposed", "pooled"])
def test_dots_in_native_while_loops_keep_the_special_values(layout, dtype, monkeypatch):
    """A dot in a native while body (native_dot.py's kernel or the driver's gemm call), one and
    two trips of ``acc += dot(x, w) * 0.5; x *= 0.75`` from acc = +0: NaN places, infinities
    and zero signs exact against the interpreter, finite elements within the loop's bound: the
    dot bound ``2 (K + 2) eps sum |x w|`` per trip's dot (times 0.5 0.75^t) plus one rounding
    of the add per trip (as test_native_while_dots.loop_tolerance)."""
    from contraction_tolerance import assert_within
    from test_native_while_dots import LAYOUTS, dot_loop

    monkeypatch.setenv("HLORT_CACHE", "0")
    lhs, rhs, dnums, path = LAYOUTS[layout]
    module, out_shape = dot_loop(dtype, lhs, rhs, dnums)
    x, w = special_operands(dtype, (lhs, rhs, dnums), seed=4)
    exe = hlort.compile(module, "cpu")
    compiled = exe.raw.stats()["compiled"]
    assert compiled.get("while (native)") == 1 and compiled.get(f"dot ({path})") == 1, compiled
    k = math.prod(lhs[d] for d in dnums.lhs_contracting_dims)
    eps = float(np.finfo(x.dtype).eps)
    finite = [np.where(np.isfinite(v), np.abs(v), 0).astype(v.dtype) for v in (x, w)]
    magnitude = np.asarray(hlort.evaluate(dot_module(dtype, lhs, rhs, dnums), finite))
    for trips in (1, 2):
        args = [np.int32(trips), np.zeros(out_shape.dims, x.dtype), x, w]
        got = np.asarray(exe(*args)[1])
        ref = np.asarray(hlort.evaluate(module, args)[1])
        zero = (got == 0) & (ref == 0)
        np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(ref[zero]))
        product = magnitude * 0.5 * sum(0.75**t for t in range(trips))
        tol = 2 * (k + 2) * eps * product + 2 * trips * eps * (np.abs(np.nan_to_num(ref)) + product)
        assert_within(got, ref, tol)


@pytest.mark.parametrize("dtype", ["c64", "c128"])
def test_a_complex_blas_dot_whose_imaginary_sums_overflow_keeps_the_zero_real_part(dtype):
    """K = 128 (complex BLAS) products ``h (1 + i) * h (1 + i) = 0 + 2 h^2 i``: the interpreter's
    in-order sum is ``0 + inf i``; re-summing the overflowed elements from four real gemms gave
    ``inf - inf = NaN`` for the real part."""
    real = np.float32 if dtype == "c64" else np.float64
    h = np.sqrt(np.finfo(real).max / 64)
    dn = Dn((1,), (0,))
    module = dot_module(dtype, (3, 128), (128, 2), dn)
    a = np.full((3, 128), h * (1 + 1j), np.complex64 if dtype == "c64" else np.complex128)
    b = np.full((128, 2), h * (1 + 1j), a.dtype)
    a[1] = 1 + 2j
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(a, b))
    assert exe.raw.stats()["compiled"] == {"dot (BLAS)": 1}
    assert (got.real[[0, 2]] == 0).all() and np.isposinf(got.imag[[0, 2]]).all()
    assert_exactly_special(module, [a, b], got, 128)
