"""c64 and c128 in the shared LLVM emitter on cpu, compared with the interpreter.

Every op claimed compiled (complex_values.py) must run with no FALLBACK and match the interpreter
bit for bit on each part; a NaN part must be NaN in both (its payload is not compared). Operands
cover every pair of parts from {+-0, +-1, +-inf, NaN, tiny, subnormal, huge, random}, so divide's
zero/infinite cases and multiply's inf*0 cases are all reached, plus empty and scalar shapes.
abs of c128, sign, the transcendentals, power and atan2 compile too (complex_math_ops.py); they
match within stated bounds rather than bit for bit, which test_complex_math.py checks.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

COMPLEX = ["c64", "c128"]
NP = {"c64": np.complex64, "c128": np.complex128}
PART = {"c64": np.float32, "c128": np.float64}


def special_parts(dt: str) -> np.ndarray:
    ft = PART[dt]
    info = np.finfo(ft)
    return np.array(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            np.inf,
            -np.inf,
            np.nan,
            info.tiny,
            -info.smallest_subnormal,
            info.max,
            -info.max / 3,
            2.5,
            -0.375,
        ],
        dtype=ft,
    )


def special_values(dt: str) -> np.ndarray:
    """Every (re, im) pair of special parts."""
    parts = special_parts(dt)
    re, im = np.meshgrid(parts, parts, indexing="ij")
    return make_complex(dt, re.ravel(), im.ravel())


def make_complex(dt: str, re: np.ndarray, im: np.ndarray) -> np.ndarray:
    out = np.empty(np.shape(re), dtype=NP[dt])
    out.real, out.imag = re, im
    return out


def random_values(dt: str, n: int, rng: np.random.Generator) -> np.ndarray:
    scale = np.exp(rng.uniform(-30, 30, size=(2, n)))
    re, im = rng.standard_normal((2, n)) * scale
    return make_complex(dt, re.astype(PART[dt]), im.astype(PART[dt]))


def all_pairs(dt: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Cross product of the special values, then random ones (long enough for SIMD loops)."""
    s = special_values(dt)
    a, b = (np.array(v) for v in zip(*itertools.product(s, s), strict=True))
    ra, rb = random_values(dt, 3001, rng), random_values(dt, 3001, rng)
    return np.concatenate([a, ra]).astype(NP[dt]), np.concatenate([b, rb]).astype(NP[dt])


def assert_same(got, want) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    if got.dtype.kind == "c":
        assert_same(got.real, want.real)
        assert_same(got.imag, want.imag)
        return
    if got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want)
        return
    g_nan, w_nan = np.isnan(got), np.isnan(want)
    np.testing.assert_array_equal(g_nan, w_nan)
    bits = f"u{got.dtype.itemsize}"
    np.testing.assert_array_equal(got[~g_nan].view(bits), want[~w_nan].view(bits))


def run(module, args, fallback: dict | None = None):
    """Compile on cpu, check the fallback counters, compare with the interpreter."""
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    if fallback is None:
        assert stats["fallback_count"] == 0, stats
        assert stats["compiled_count"] >= 1, stats
    else:
        assert stats["fallback"] == fallback, stats
    got = exe(*args)
    want = hlort.evaluate(module, args)
    if isinstance(want, (tuple, list)):
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    else:
        assert_same(got, want)
    return got


def binary(dt: str, n: int, fn, out_dt: str | None = None):
    b = Builder("binary")
    x = b.parameter(shape.array(dt, (n,)))
    y = b.parameter(shape.array(dt, (n,)))
    return b.build(fn(b, x, y))


def unary(dt: str, dims, fn):
    b = Builder("unary")
    x = b.parameter(shape.array(dt, dims))
    return b.build(fn(b, x))


# -- arithmetic ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("op", ["add", "subtract", "multiply", "divide"])
def test_binary_arithmetic_matches_bit_for_bit(dt, op):
    rng = np.random.default_rng(7)
    a, c = all_pairs(dt, rng)
    module = binary(dt, a.size, lambda b, x, y: getattr(b, op)(x, y))
    run(module, [a, c])


@pytest.mark.parametrize("dt", COMPLEX)
def test_multiply_is_the_naive_formula_without_fma(dt):
    """(ac - bd) with both products rounded: a*a_conj-like cancellation exposes any fused op."""
    rng = np.random.default_rng(8)
    a = random_values(dt, 4096, rng)
    c = a * (1 + PART[dt](2) ** -12)
    module = binary(dt, a.size, lambda b, x, y: b.multiply(x, y))
    got = run(module, [a, c])
    ar, ai, cr, ci = a.real, a.imag, c.real, c.imag
    with np.errstate(all="ignore"):
        assert_same(got.real, ar * cr - ai * ci)
        assert_same(got.imag, ar * ci + ai * cr)


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("op", ["negate", "real", "imag"])
def test_unary_part_ops(dt, op):
    values = np.concatenate([special_values(dt), random_values(dt, 100, np.random.default_rng(1))])
    run(unary(dt, values.shape, lambda b, x: getattr(b, op)(x)), [values])


def test_abs_c64_matches_the_f64_hypot_rounded():
    rng = np.random.default_rng(2)
    values = np.concatenate([special_values("c64"), random_values("c64", 100_000, rng)])
    run(unary("c64", values.shape, lambda b, x: b.abs(x)), [values])


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("op", ["abs", "sign", "exponential", "sqrt", "log", "tanh", "power"])
def test_math_ops_compile_with_no_fallback(dt, op):
    """abs of c128, sign, transcendentals and power compile (complex_math_ops.py); their
    accuracy against the interpreter is test_complex_math.py's."""
    values = np.concatenate([special_values(dt), random_values(dt, 100, np.random.default_rng(3))])
    b = Builder(op)
    x = b.parameter(shape.array(dt, values.shape))
    module = b.build(b.power(x, x) if op == "power" else getattr(b, op)(x))
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0 and stats["compiled_count"] >= 1, stats
    got, want = np.asarray(exe(values)), np.asarray(hlort.evaluate(module, [values]))
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        np.testing.assert_allclose(g[~np.isnan(g)], w[~np.isnan(w)], rtol=1e-5, atol=0)


@pytest.mark.parametrize("dt", COMPLEX)
def test_complex_from_parts_and_compare(dt):
    rng = np.random.default_rng(4)
    a, c = all_pairs(dt, rng)
    c[::3] = a[::3]  # plenty of equal pairs
    pt = "f32" if dt == "c64" else "f64"
    for direction in ("EQ", "NE"):
        run(binary(dt, a.size, lambda b, x, y, d=direction: b.compare(x, y, d)), [a, c])
    b = Builder("parts")
    re = b.parameter(shape.array(pt, (a.size,)))
    im = b.parameter(shape.array(pt, (a.size,)))
    run(b.build(b.complex(re, im)), [a.real.copy(), c.imag.copy()])


@pytest.mark.parametrize("dt", COMPLEX)
def test_select(dt):
    rng = np.random.default_rng(5)
    a, c = all_pairs(dt, rng)
    b = Builder("select")
    p = b.parameter(shape.array("pred", (a.size,)))
    x = b.parameter(shape.array(dt, (a.size,)))
    y = b.parameter(shape.array(dt, (a.size,)))
    run(b.build(b.select(p, x, y)), [rng.random(a.size) < 0.5, a, c])


# -- conversions --------------------------------------------------------------------------------
REALS = [
    "pred",
    "s8",
    "s16",
    "s32",
    "s64",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "bf16",
    "f32",
    "f64",
    "f8e4m3fn",
    "f8e5m2",
]


def real_values(dt: str, rng: np.random.Generator) -> np.ndarray:
    from hlort import dtypes

    npdt = np.dtype(dtypes.from_hlo_name(dt).numpy)
    if dt == "pred":
        return rng.random(64) < 0.5
    if npdt.kind in "iu":
        info = np.iinfo(npdt)
        edge = np.array([info.min, info.max, 0, 1], dtype=npdt)
        return np.concatenate(
            [edge, rng.integers(info.min, info.max, 60, dtype=npdt, endpoint=True)]
        )
    parts = np.concatenate([special_parts("c128"), rng.standard_normal(51) * 1e4])
    with np.errstate(all="ignore"):
        return parts.astype(npdt)


@pytest.mark.parametrize("src", REALS)
@pytest.mark.parametrize("dt", COMPLEX)
def test_convert_real_to_complex(src, dt):
    values = real_values(src, np.random.default_rng(6))
    run(unary(src, values.shape, lambda b, x: b.convert(x, dt)), [values])


@pytest.mark.parametrize(
    ("dt", "dst"), [(d, t) for d in COMPLEX for t in REALS + COMPLEX if t != d]
)
def test_convert_complex_to_any(dt, dst):
    values = np.concatenate([special_values(dt), random_values(dt, 50, np.random.default_rng(9))])
    if dt == "c128":  # overflow to inf when narrowing to c64
        values = np.concatenate(
            [values, make_complex(dt, np.array([1e300, 3.4028235e38]), np.array([-1e-300, 1e39]))]
        )
    run(unary(dt, values.shape, lambda b, x: b.convert(x, dst)), [values])


# -- data movement and fusions ------------------------------------------------------------------
@pytest.mark.parametrize("dt", COMPLEX)
def test_data_movement_in_one_fusion(dt):
    rng = np.random.default_rng(10)
    b = Builder("moves")
    x = b.parameter(shape.array(dt, (6, 5)))
    y = b.parameter(shape.array(dt, (5,)))
    t = b.transpose(x, [1, 0])  # (5, 6)
    s = b.slice(t, [1, 0], [5, 6], [2, 1])  # (2, 6)
    r = b.reverse(b.reshape(s, [3, 4]), [0, 1])
    zero = b.constant(np.array(-0.0 + 2j, dtype=NP[dt]))
    p = b.pad(r, zero, [(1, 0, 1), (0, 2, 0)])  # (6, 6)
    bc = b.broadcast(y, [6, 5], [1])
    cat = b.concatenate([p, bc], 1)  # (6, 11)
    i = b.constant(np.array(2, dtype=np.int32))
    ds = b.dynamic_slice(cat, [i, i], [3, 4])
    dus = b.dynamic_update_slice(cat, b.multiply(ds, ds), [i, i])
    table = b.constant(random_values(dt, 66, rng).reshape(6, 11))
    out = b.add(dus, table)
    module = b.build(b.tuple([out, t]))
    run(module, [random_values(dt, 30, rng).reshape(6, 5), random_values(dt, 5, rng)])


@pytest.mark.parametrize("dt", COMPLEX)
def test_fused_expressions(dt):
    """a*b + conj(a)-like combinations and |x|*2 (c64) in one loop kernel each."""
    rng = np.random.default_rng(11)
    a, c = all_pairs(dt, rng)

    def conj_mix(b, x, y):
        conj = b.complex(b.real(x), b.negate(b.imag(x)))
        return b.subtract(b.add(b.multiply(x, y), conj), b.divide(y, conj))

    run(binary(dt, a.size, conj_mix), [a, c])
    if dt == "c64":

        def two(b, x):
            return b.multiply(b.abs(x), b.broadcast(b.constant(np.float32(2)), a.shape, []))

        run(unary(dt, a.shape, two), [a])


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("dims", [(), (0,), (3, 0)], ids=["scalar", "empty", "empty2d"])
def test_scalar_and_empty_shapes(dt, dims):
    rng = np.random.default_rng(12)
    n = int(np.prod(dims))
    a = random_values(dt, n, rng).reshape(dims)
    c = random_values(dt, n, rng).reshape(dims)
    b = Builder("small")
    x = b.parameter(shape.array(dt, dims))
    y = b.parameter(shape.array(dt, dims))
    z = b.add(b.multiply(x, y), b.divide(x, b.negate(y)))
    module = b.build(z)
    if n == 0:
        exe = hlort.compile(module, "cpu")
        assert_same(exe(a, c), hlort.evaluate(module, [a, c]))
        return
    run(module, [a, c])


def assert_sum_close(got, want, magnitude, dt: str) -> None:
    """Sums may be reassociated (the vectorizer's partial sums; the interpreter uses NumPy's
    pairwise sum): each part within 64 * eps * sum(|parts|) of the interpreter's."""
    eps = np.finfo(PART[dt]).eps
    for g, w, m in ((got.real, want.real, magnitude.real), (got.imag, want.imag, magnitude.imag)):
        assert np.all(np.abs(g.astype(np.float64) - w) <= 64 * eps * m + 1e-300), (g, w)


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize(
    ("dims", "reduced"),
    [
        ((8, 1000), [1]),
        ((1000, 8), [0]),
        ((300_000,), [0]),
        ((4, 5, 6), [0, 2]),
        ((7,), [0]),
        ((0, 3), [0]),
        ((3, 0), [1]),
    ],
    ids=["row", "column", "split", "mixed", "short", "empty0", "empty1"],
)
def test_complex_sum_reductions(dt, dims, reduced):
    rng = np.random.default_rng(13)
    n = int(np.prod(dims))
    values = random_values(dt, n, rng).reshape(dims)
    values.flat[::7] *= 1e-3
    b = Builder("sum")
    x = b.parameter(shape.array(dt, dims))
    init = np.array(1 - 2j, NP[dt])
    module = b.build(b.reduce(x, b.constant(init), b.scalar_computation("add", dt), reduced))
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    got, want = exe(values), hlort.evaluate(module, [values])
    assert got.dtype == want.dtype and got.shape == want.shape
    if n == 0:
        assert_same(got, want)
        return
    parts = np.abs(values.real) + 1j * np.abs(values.imag)
    magnitude = np.sum(parts.astype(np.complex128), axis=tuple(reduced)) + (1 + 2j)
    assert_sum_close(got, want, magnitude, dt)


@pytest.mark.parametrize("dt", COMPLEX)
def test_complex_product_reduction_and_unsupported_reducers(dt):
    """multiply compiles (in order, naive products); maximum is not a complex op: fallback."""
    rng = np.random.default_rng(16)
    values = make_complex(dt, rng.uniform(0.5, 1.5, (6, 9)), rng.uniform(-0.5, 0.5, (6, 9)))
    b = Builder("prod")
    x = b.parameter(shape.array(dt, (6, 9)))
    module = b.build(
        b.reduce(x, b.constant(np.array(1, NP[dt])), b.scalar_computation("multiply", dt), [1])
    )
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["fallback_count"] == 0
    rtol = 1e-5 if dt == "c64" else 1e-13
    np.testing.assert_allclose(exe(values), hlort.evaluate(module, [values]), rtol=rtol)


@pytest.mark.parametrize("dt", COMPLEX)
def test_map_and_iota(dt):
    """A complex map body (with a complex constant) is inlined; iota counts in the real part."""
    rng = np.random.default_rng(14)
    a, c = all_pairs(dt, rng)
    b = Builder("mapped")
    body = b.sub("body")
    p = body.parameter(shape.array(dt, ()))
    q = body.parameter(shape.array(dt, ()))
    k = body.constant(np.array(0.5 - 3j, dtype=NP[dt]))
    body_comp = body.finish(body.add(body.multiply(p, q), body.multiply(k, p)))
    x = b.parameter(shape.array(dt, (a.size,)))
    y = b.parameter(shape.array(dt, (a.size,)))
    iota = b.iota(shape.array(dt, (a.size,)), 0)
    run(b.build(b.add(b.map([x, y], body_comp), iota)), [a, c])


def _complex_elementwise_opcodes():
    from hlort.ir.shape_rules.elementwise import BINARY_KINDS, UNARY_KINDS

    unary = [op for op, kinds in UNARY_KINDS.items() if "complex" in kinds]
    binary = [op for op, kinds in BINARY_KINDS.items() if "complex" in kinds]
    return [(op, 1) for op in unary] + [(op, 2) for op in binary]


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize(
    ("opcode", "arity"), _complex_elementwise_opcodes(), ids=lambda v: getattr(v, "value", str(v))
)
def test_no_elementwise_op_on_complex_falls_back(dt, opcode, arity):
    """Every unary and binary elementwise opcode whose shape rule takes complex compiles."""
    values = random_values(dt, 64, np.random.default_rng(15))
    b = Builder(opcode.value)
    params = [b.parameter(shape.array(dt, values.shape)) for _ in range(arity)]
    module = b.build(b.op(opcode, tuple(params)))
    exe = hlort.compile(module, "cpu")
    assert exe.raw.stats()["fallback_count"] == 0, exe.raw.stats()
