"""Complex abs, sign, transcendentals, power and atan2 compile on cpu and match the interpreter.

Every op must run with no FALLBACK on c64 and c128, over every pair of special parts (+-0, +-1,
+-inf, NaN, the smallest normal, a subnormal, the largest finite, ...) and over random parts of
moderate (e^+-3), wide (e^+-30) and full-range (10^+-300 for c128, 10^+-37 for c64) magnitudes.
A NaN part must be NaN in both (payloads aside), an infinite part the same infinity, a zero part
the same signed zero when both are zero, and finite parts within the bounds complex_math_ops.py
states: ulp of the interpreter's part for the well-conditioned ops, and for the ops whose NumPy
formula cancels or whose result is ill-conditioned (expm1, log1p, logistic, power, atan2) an
error relative to the size of the terms, as written beside each bound below.
"""

from __future__ import annotations

import itertools
import platform

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

COMPLEX = ["c64", "c128"]
NP = {"c64": np.complex64, "c128": np.complex128}
PART = {"c64": np.float32, "c128": np.float64}
FULL_RANGE = {"c64": 37, "c128": 300}

# Largest difference per part in ulp of the interpreter's part: (c64, c128). c64 is computed in
# f64 like the interpreter's c128 and rounded once; c128 differs from glibc by both sides' few
# ulp (ours: exp <= 1.4, log <= 0.6, sqrt <= 1.7, sin/cos <= 1.9, tan/tanh <= 3.9 against
# mpmath; glibc's up to 1.8, 1.8, 1.7, 2.3 and 4.5). abs and sign repeat NumPy's formula: equal
# where NumPy's loop fuses its multiply-add (x86-64 with FMA, AArch64), 1 ulp off elsewhere.
ULP_BOUNDS = {
    "exponential": (1, 4),
    "log": (1, 4),
    "sqrt": (1, 4),
    "sine": (1, 6),
    "cosine": (1, 6),
    "tan": (1, 10),
    "tanh": (1, 10),
    "rsqrt": (1, 8),
    "cbrt": (1, 8),
    "abs": (1, 1),
    "sign": (1, 1),
}
# expm1: Re within B eps (|expm1(x) cos y| + 2 sin^2(y/2)), Im within B ulp.
# log1p: Re within B (ulp + eps) (log of a rounded hypot near 1), Im within B ulp.
# logistic: within B eps |r| (1 + |w| / |1 + w|), w = exp(-z).
# power: within B eps |r| (1 + |b log a|); results of finite a != 0, b with |b log a| > 2^40
#   (whose angle no rounding of log a determines) are not compared.
# atan2: within B eps (1 + |r|) (|x|^2 + |y|^2) / |x^2 + y^2|.
COMPOSITE_BOUNDS = {"expm1": 4, "log1p": 4, "logistic": 8, "power": 8, "atan2": 8}
UNARY = list(ULP_BOUNDS) + ["expm1", "log1p", "logistic"]
BINARY = ["power", "atan2"]


def make_complex(dt: str, re, im) -> np.ndarray:
    out = np.empty(np.shape(re), dtype=NP[dt])
    out.real, out.imag = re, im
    return out


def special_values(dt: str) -> np.ndarray:
    info = np.finfo(PART[dt])
    parts = np.array(
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
        dtype=PART[dt],
    )
    re, im = np.meshgrid(parts, parts, indexing="ij")
    return make_complex(dt, re.ravel(), im.ravel())


def random_values(dt: str, n: int, rng: np.random.Generator, log10_range: float) -> np.ndarray:
    magnitude = 10.0 ** rng.uniform(-log10_range, log10_range, size=(2, n))
    signs = rng.choice([-1.0, 1.0], size=(2, n))
    with np.errstate(over="ignore"):
        re, im = (signs * magnitude * rng.uniform(1, 2, size=(2, n))).astype(PART[dt])
    return make_complex(dt, re, im)


def unary_inputs(dt: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate(
        [
            special_values(dt),
            random_values(dt, 20_000, rng, 1.3),
            random_values(dt, 20_000, rng, 13.0),
            random_values(dt, 20_000, rng, FULL_RANGE[dt]),
        ]
    )


def binary_inputs(dt: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = special_values(dt)
    a, b = (np.array(v, dtype=NP[dt]) for v in zip(*itertools.product(s, s), strict=True))
    ra = [random_values(dt, 20_000, rng, 1.3), random_values(dt, 5_000, rng, 13.0)]
    rb = [random_values(dt, 20_000, rng, 1.3), random_values(dt, 5_000, rng, 1.3)]
    return np.concatenate([a, *ra]), np.concatenate([b, *rb])


def compile_and_run(module, args):
    """Compile on cpu, require no fallback, return (compiled result, interpreter result)."""
    exe = hlort.compile(module, "cpu")
    stats = exe.raw.stats()
    assert stats["fallback_count"] == 0, stats
    assert stats["compiled_count"] >= 1, stats
    got = np.asarray(exe(*args))
    want = np.asarray(hlort.evaluate(module, args))
    assert got.dtype == want.dtype and got.shape == want.shape
    return got, want


def op_module(op: str, dt: str, n: int):
    b = Builder(op)
    x = b.parameter(shape.array(dt, (n,)))
    if op in BINARY:
        y = b.parameter(shape.array(dt, (n,)))
        return b.build(getattr(b, op)(x, y))
    return b.build(getattr(b, op)(x))


def ulp(x: np.ndarray) -> np.ndarray:
    """The spacing of the floats at |x| (at the smallest normal for smaller x), as f64."""
    info = np.finfo(x.dtype)
    return np.spacing(np.maximum(np.abs(x), info.tiny).astype(x.dtype)).astype(np.float64)


def assert_within(got: np.ndarray, want: np.ndarray, allowed: np.ndarray, inputs, what: str):
    """Equal NaN-ness, equal infinities, equal signed zeros, finite |got - want| <= allowed
    (NaN allowed: any finite error); a negative ``allowed`` leaves that part uncompared."""
    g_nan, w_nan = np.isnan(got), np.isnan(want)
    bad = g_nan != w_nan
    inf = ~g_nan & ~w_nan & (np.isinf(got) | np.isinf(want))
    bad |= inf & (got != want)
    zeros = (got == 0) & (want == 0)
    bad |= zeros & (np.signbit(got) != np.signbit(want))
    finite = ~g_nan & ~w_nan & ~inf
    with np.errstate(all="ignore"):
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        bad |= finite & ~(err <= np.nan_to_num(allowed, nan=np.inf))
    bad &= ~(allowed < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(
            f"{what}: {int(bad.sum())} parts off; first: input {inputs[i]!r} "
            f"got {got[i]!r} want {want[i]!r} allowed {allowed[i]!r}"
        )


def allowed_errors(op: str, dt: str, args, want) -> tuple[np.ndarray, np.ndarray]:
    """The bound on |got - want| of each part (see ULP_BOUNDS and COMPOSITE_BOUNDS)."""
    eps = float(np.finfo(PART[dt]).eps)
    if op in ULP_BOUNDS:
        bound = ULP_BOUNDS[op][COMPLEX.index(dt)]
        if op == "abs":
            return bound * ulp(want), bound * ulp(want)
        return bound * ulp(want.real), bound * ulp(want.imag)
    bound = COMPOSITE_BOUNDS[op] if dt == "c128" else 2
    wide = [a.astype(np.complex128) for a in args]
    re_ulp, im_ulp = ulp(want.real), ulp(want.imag)
    r = np.abs(want.astype(np.complex128))
    if op == "expm1":
        x, y = wide[0].real, wide[0].imag
        terms = np.abs(np.expm1(x) * np.cos(y)) + 2 * np.sin(y / 2) ** 2
        return bound * (eps * terms + re_ulp), bound * im_ulp
    if op == "log1p":
        return bound * (re_ulp + eps), bound * im_ulp
    if op == "logistic":
        w = np.exp(-wide[0])
        scale = bound * eps * r * (1 + np.abs(w) / np.abs(1 + w))
        return scale + re_ulp, scale + im_ulp
    if op == "power":
        a, b = wide
        size = np.abs(b * np.log(a))
        log_a = np.abs(np.log(a))
        chaotic = np.isfinite(a) & np.isfinite(b) & np.isfinite(log_a)
        chaotic &= np.abs(b) > 2.0**40 / log_a  # no f64 rounding of log a determines the result
        scale = bound * eps * r * (1 + size)
        return np.where(chaotic, -1, scale + re_ulp), np.where(chaotic, -1, scale + im_ulp)
    y, x = wide  # atan2(y, x) = -i log((x + iy) / sqrt(x^2 + y^2)): y is the first operand
    kappa = (np.abs(x) ** 2 + np.abs(y) ** 2) / np.abs(x * x + y * y)
    scale = bound * eps * (1 + r) * kappa
    return scale + re_ulp, scale + im_ulp


@pytest.mark.parametrize("dt", COMPLEX)
@pytest.mark.parametrize("op", UNARY + BINARY)
def test_compiles_and_matches_the_interpreter(op, dt):
    if op in BINARY:
        args = list(binary_inputs(dt, 20 + BINARY.index(op)))
    else:
        args = [unary_inputs(dt, UNARY.index(op))]
    got, want = compile_and_run(op_module(op, dt, args[0].size), args)
    with np.errstate(all="ignore"):
        allowed_re, allowed_im = allowed_errors(op, dt, args, want)
    if op == "abs":
        assert_within(got, want, allowed_re, args[0], f"abs {dt}")
        return
    assert_within(got.real, want.real, allowed_re, args[0], f"{op} {dt} real part")
    assert_within(got.imag, want.imag, allowed_im, args[0], f"{op} {dt} imaginary part")


@pytest.mark.parametrize("dt", COMPLEX)
def test_integer_powers_repeat_numpys_multiplications(dt):
    """b in (-100, 100) integral and real: the interpreter's npy_cpow multiplies (and divides
    for b < 0) step by step; the same steps give the same bits (on x86-64, where npymath's
    products are not contracted into fused multiply-adds)."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("npymath's complex products may be fused on this architecture")
    rng = np.random.default_rng(30)
    exponents = np.arange(-99, 100, dtype=np.float64)
    bases = np.concatenate([special_values(dt), random_values(dt, 400, rng, 0.3)])
    a = np.repeat(bases, exponents.size)
    b = make_complex(dt, np.tile(exponents, bases.size), np.zeros(a.size))
    got, want = compile_and_run(op_module("power", dt, a.size), [a, b])
    for g, w in ((got.real, want.real), (got.imag, want.imag)):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        same = ~np.isnan(w)
        np.testing.assert_array_equal(
            g[same].view(f"u{g.itemsize}"), w[same].view(f"u{w.itemsize}")
        )


@pytest.mark.parametrize("dt", COMPLEX)
def test_transcendentals_fuse_without_fallback(dt):
    """A fusion of several of them with arithmetic, parts and abs compiles with no fallback.
    Inputs are moderate, so the chain is well conditioned (error ~ |sin p| eps)."""
    rng = np.random.default_rng(31)
    x, y = random_values(dt, 4099, rng, 0.3), random_values(dt, 4099, rng, 0.3)
    b = Builder("chain")
    p = b.parameter(shape.array(dt, (x.size,)))
    q = b.parameter(shape.array(dt, (x.size,)))
    s = b.add(b.multiply(b.exponential(b.sine(p)), b.log(q)), b.power(p, q))
    out = b.add(b.multiply(s, b.tanh(q)), b.complex(b.abs(p), b.real(b.cbrt(q))))
    got, want = compile_and_run(b.build(b.add(out, b.sqrt(q))), [x, y])
    eps = float(np.finfo(PART[dt]).eps)
    err = np.abs(got.astype(np.complex128) - want)
    assert np.all(err <= 256 * eps * np.maximum(np.abs(want), 1)), float(np.max(err))


@pytest.mark.parametrize("dt", COMPLEX)
def test_scalar_and_empty_shapes(dt):
    for dims in ((), (0,), (3, 0)):
        n = int(np.prod(dims))
        a = random_values(dt, n, np.random.default_rng(32), 1.0).reshape(dims)
        b = Builder("small")
        x = b.parameter(shape.array(dt, dims))
        module = b.build(b.add(b.log(b.exponential(x)), b.power(x, b.sign(x))))
        exe = hlort.compile(module, "cpu")
        assert exe.raw.stats()["fallback_count"] == 0
        got, want = np.asarray(exe(a)), np.asarray(hlort.evaluate(module, [a]))
        assert got.shape == want.shape == dims
        np.testing.assert_allclose(got, want, rtol=8 * float(np.finfo(PART[dt]).eps))
