"""complex64 math in f32 (complex_math_f32.py; MathPolicy(f32_via_f64=False), the GPU targets'
policy) measured on the CPU JIT: the same kernels emitted for a CPU target with that policy, over
test_complex_math's inputs (every pair of special parts, 60,000 random values of moderate, wide
and full-range magnitudes per op), against the interpreter (c64 computed in c128 and rounded).

Compared as test_complex_math does, with f32's eps = 2^-23: NaN parts NaN in both, infinite
parts the same infinity, finite parts within the bounds below; an infinity counts as within the
bound where the bound reaches past the largest float (and either infinity where finite
operands overflow under a bound relative to |result|), and a part whose bound exceeds the whole
f32 range (an ill-conditioned result, e.g. atan2's cancelling x^2 + y^2) is not compared. A
zero part's sign is compared where the interpreter's c128 value (before rounding to c64) is an
exact zero, an input has a zero or non-finite part (signed-zero arithmetic, which the f32
forms repeat) and the result does not underflow f32 as a whole; elsewhere a zero is a
cancellation or an underflow, its sign set by rounding or by the order of the steps.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from test_complex_math import (
    COMPOSITE_BOUNDS,
    UNARY,
    allowed_errors,
    binary_inputs,
    op_module,
    random_values,
    special_values,
    ulp,
    unary_inputs,
)

import hlort
from hlort import Builder, shape
from hlort_cpu.codegen.compiled import compile_kernel_module
from hlort_cpu.codegen.cpu_target import CPU_TARGET
from hlort_cpu.codegen.kernel_builder import KernelModule

F32_ONLY = replace(CPU_TARGET, math=replace(CPU_TARGET.math, f32_via_f64=False))
EPS = 2.0**-23
MAX = float(np.finfo(np.float32).max)
# bound the test holds per part, in ulp of the interpreter's part (largest seen in the comment)
F32_ULP_BOUNDS = {
    "exponential": 4,  # 2
    "log": 2,  # 1
    "sqrt": 4,  # 2
    "sine": 4,  # 3
    "cosine": 4,  # 2
    "tan": 8,  # 5
    "tanh": 8,  # 5
    "rsqrt": 8,  # 6
    "cbrt": 8,  # 4
    "abs": 1,  # 0
    "sign": 1,  # 1
}
DIVIDE_BOUND = 4  # each part within 4 eps |a / b| + 4 ulp (Smith's error is normwise)


def divide_module(n: int, dt: str = "c64"):
    b = Builder("divide")
    x = b.parameter(shape.array(dt, (n,)))
    y = b.parameter(shape.array(dt, (n,)))
    return b.build(b.divide(x, y))


def run_f32(op, module, args):
    """(compiled result, interpreter's c64 result, its c128 value before rounding, IR text)."""
    km = KernelModule(target=F32_ONLY)
    km.add("k", module.entry)
    text = km.ir_text()
    _, compiled = compile_kernel_module(km)
    got = compiled["k"](*args)[0]
    want = np.asarray(hlort.evaluate(module, args))
    wide = [a.astype(np.complex128) for a in args]
    n = args[0].size
    exact_module = divide_module(n, "c128") if op == "divide" else op_module(op, "c128", n)
    return got, want, np.asarray(hlort.evaluate(exact_module, wide)), text


def underflowed(exact: np.ndarray, args=None) -> np.ndarray:
    """Results whose c128 value is nonzero but below f32's normal range as a whole (for power,
    whose |a^b| = e^Re(b log a) is: f64 may underflow it to 0 too): their zero parts' signs come
    from the order in which the steps underflow (not compared)."""
    tiny = float(np.finfo(np.float32).tiny)
    r = np.abs(exact.astype(np.complex128))
    out = (r > 0) & (r < tiny)
    if args is not None:
        a, b = (v.astype(np.complex128) for v in args)
        with np.errstate(all="ignore"):
            log_r = np.real(b * np.log(a))
        out |= np.isfinite(a) & (a != 0) & np.isfinite(b) & (log_r < np.log(tiny))
    return out


def overflowed(args) -> np.ndarray:
    """power of finite operands whose |a^b| = e^Re(b log a) is beyond f32's range: the
    interpreter's NaN or infinity there comes from its own f64 steps overflowing (NumPy's
    1 / r of a tiny r, inf * 0): any non-finite part is accepted."""
    a, b = (v.astype(np.complex128) for v in args)
    with np.errstate(all="ignore"):
        log_r = np.real(b * np.log(a))
    return np.isfinite(a) & np.isfinite(b) & (log_r > np.log(MAX))


def check(got, want, exact, allowed, inputs, what, tiny=None, huge=None):
    g_nan, w_nan = np.isnan(got), np.isnan(want)
    bad = g_nan != w_nan
    if huge is not None:
        bad &= ~(huge & ~np.isfinite(got) & ~np.isfinite(want))
    inf = ~g_nan & ~w_nan & (np.isinf(got) | np.isinf(want))
    with np.errstate(all="ignore"):  # an interval that reaches past the largest float
        at_overflow = np.abs(want.astype(np.float64)) + allowed >= MAX * (1 + 2.0**-24)
        at_overflow |= np.abs(got.astype(np.float64)) + allowed >= MAX * (1 + 2.0**-24)
    bad |= inf & (got != want) & ~(at_overflow & (np.sign(got) == np.sign(want)))
    finite_inputs = np.ones(got.shape, bool)
    for a in inputs:
        finite_inputs &= np.isfinite(a)
    # a normwise bound of an overflowing result is infinite: either infinity is accepted there
    bad &= ~(finite_inputs & np.isinf(got) & np.isinf(want) & np.isnan(allowed))
    signed = np.zeros(got.shape, bool)
    for a in inputs:
        for part in (a.real, a.imag):
            signed |= (part == 0) | ~np.isfinite(part)
    zeros = (got == 0) & (want == 0) & (exact == 0) & signed
    if tiny is not None:
        zeros &= ~tiny
    bad |= zeros & (np.signbit(got) != np.signbit(want))
    bad &= ~(allowed >= MAX)  # a bound beyond the range says nothing (ill-conditioned)
    finite = ~g_nan & ~w_nan & ~inf
    with np.errstate(all="ignore"):
        err = np.abs(got.astype(np.float64) - want.astype(np.float64))
        bad |= finite & ~(err <= np.nan_to_num(allowed, nan=np.inf))
    bad &= ~(np.nan_to_num(allowed, nan=0.0) >= MAX)
    bad &= ~(allowed < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError(
            f"{what}: {int(bad.sum())} parts off; first: input {[a[i] for a in inputs]!r} "
            f"got {got[i]!r} want {want[i]!r} allowed {allowed[i]!r}"
        )


def f32_allowed(op, args, want):
    if op in F32_ULP_BOUNDS:
        bound = F32_ULP_BOUNDS[op]
        if op == "abs":
            return bound * ulp(want), None
        return bound * ulp(want.real), bound * ulp(want.imag)
    if op == "divide":
        size = np.abs(want.astype(np.complex128))
        return tuple(DIVIDE_BOUND * (EPS * size + ulp(p)) for p in (want.real, want.imag))
    # test_complex_math's composite bounds with f32's eps: its c64 bound (2) scaled to B
    scale = COMPOSITE_BOUNDS[op] / 2
    re, im = (scale * v for v in allowed_errors(op, "c64", args, want))
    if op == "atan2":  # nonzero parts of x and y > 2^100 apart: the branch the result takes
        # (the sign of Im(x^2 + y^2), of x + iy) then turns on a part below f32's range
        # next to the largest one, where the interpreter's f64 still has it
        parts = np.stack([np.abs(p) for v in args for p in (v.real, v.imag)])
        with np.errstate(all="ignore"):
            hi = np.max(np.where(np.isfinite(parts), parts, 0), axis=0)
            lo = np.min(np.where(parts > 0, parts, np.inf), axis=0)
        spread = np.isfinite(lo) & (hi > lo * 2.0**100)
        return np.where(spread, -1, re), np.where(spread, -1, im)
    if op == "power":  # its results of |b log a| > 2^40 / 2^29 are as chaotic in f32
        a, b = (v.astype(np.complex128) for v in args)
        log_a = np.abs(np.log(a))
        chaotic = np.isfinite(a) & np.isfinite(b) & np.isfinite(log_a)
        chaotic &= np.abs(b) > 2.0**11 / log_a
        re, im = np.where(chaotic, -1, re), np.where(chaotic, -1, im)
    return re, im


OPS = [*UNARY, "divide", "power", "atan2"]


def at_the_cut(got, want, args):
    """atan2's real part modulo 2 pi where q = (x + iy) / sqrt(x^2 + y^2) lies within 2^-16 |q|
    of log's branch cut (the negative real axis): the side it falls on is then below f32's
    rounding (not below f64's, so the interpreter's side is the exact one's)."""
    y, x = (a.astype(np.complex128) for a in args)
    with np.errstate(all="ignore"):
        q = (x + 1j * y) / np.sqrt(x * x + y * y)
        near = (q.real < 0) & (np.abs(q.imag) <= 2.0**-16 * np.abs(q))
        flipped = near & np.isclose(np.abs(got.real - want.real), 2 * np.pi, rtol=2.0**-20)
    g = got.real.astype(np.float64)
    turned = g - np.copysign(2 * np.pi, g - want.real.astype(np.float64))
    re = np.where(flipped, turned, g).astype(got.real.dtype)
    out = got.copy()
    out.real = re
    return out


@pytest.mark.parametrize("op", OPS)
def test_f32_forms_match_the_interpreter(op):
    if op == "divide":
        args = list(binary_inputs("c64", 22))
        module = divide_module(args[0].size)
    elif op in ("power", "atan2"):
        args = list(binary_inputs("c64", 20 + ["power", "atan2"].index(op)))
        module = op_module(op, "c64", args[0].size)
    else:
        args = [unary_inputs("c64", UNARY.index(op))]
        module = op_module(op, "c64", args[0].size)
    got, want, exact, text = run_f32(op, module, args)
    assert " double" not in text and "fpext" not in text
    with np.errstate(all="ignore"):
        allowed_re, allowed_im = f32_allowed(op, args, want)
    if op == "abs":
        check(got, want, exact, allowed_re, args, "abs")
        return
    if op == "atan2":
        got = at_the_cut(got, want, args)
    tiny = underflowed(exact, args if op == "power" else None)
    check(got.real, want.real, exact.real, allowed_re, args, f"{op} real part", tiny)
    check(got.imag, want.imag, exact.imag, allowed_im, args, f"{op} imaginary part", tiny)


def _run(module, args):
    km = KernelModule(target=F32_ONLY)
    km.add("k", module.entry)
    text = km.ir_text()
    assert " double" not in text and "fpext" not in text
    _, compiled = compile_kernel_module(km)
    return np.asarray(compiled["k"](*args)[0]), np.asarray(hlort.evaluate(module, args))


def test_integer_powers_within_the_power_bound():
    """Integral real b in (-100, 100): 1, 2, 3 and -1 by NumPy's products and quotient, the
    others by exp/log for a finite base (repeated multiplication for an infinite or NaN one,
    as the interpreter); within power's bound, special parts exact."""
    rng = np.random.default_rng(33)
    exponents = np.arange(-99, 100, dtype=np.float32)
    bases = np.concatenate([special_values("c64"), random_values("c64", 300, rng, 0.3)])
    a = np.repeat(bases, exponents.size)
    b = np.empty(a.size, np.complex64)
    b.real, b.imag = np.tile(exponents, bases.size), 0
    module = op_module("power", "c64", a.size)
    got, want = _run(module, [a, b])
    wide = [a.astype(np.complex128), b.astype(np.complex128)]
    exact = np.asarray(hlort.evaluate(op_module("power", "c128", a.size), wide))
    with np.errstate(all="ignore"):
        allowed_re, allowed_im = f32_allowed("power", [a, b], want)
    tiny, huge = underflowed(exact, [a, b]), overflowed([a, b])
    with np.errstate(all="ignore"):  # |a|^|b| beyond f64: the interpreter's own products
        # over- or underflow on the way (NaN, signed zeros of theirs): not compared
        beyond = np.isfinite(a) & (a != 0) & (np.abs(b.real * np.log(np.abs(a))) > 700)
    allowed_re, allowed_im = np.where(beyond, -1, allowed_re), np.where(beyond, -1, allowed_im)
    for part, allowed in (("real", allowed_re), ("imag", allowed_im)):
        g, w, e = (getattr(v, part) for v in (got, want, exact))
        check(g, w, e, allowed, [a, b], f"integer power {part} part", tiny, huge)


def test_a_fusion_of_them_in_f32():
    """test_complex_math's chain (transcendentals, arithmetic, parts, abs) in one f32 kernel;
    moderate inputs, so it is well conditioned (error ~ |sin p| eps)."""
    rng = np.random.default_rng(31)
    x, y = random_values("c64", 4099, rng, 0.3), random_values("c64", 4099, rng, 0.3)
    b = Builder("chain")
    p = b.parameter(shape.array("c64", (x.size,)))
    q = b.parameter(shape.array("c64", (x.size,)))
    s = b.add(b.multiply(b.exponential(b.sine(p)), b.log(q)), b.power(p, q))
    out = b.add(b.multiply(s, b.tanh(q)), b.complex(b.abs(p), b.real(b.cbrt(q))))
    out = b.add(b.divide(out, b.sqrt(q)), b.sign(p))
    got, want = _run(b.build(out), [x, y])
    err = np.abs(got.astype(np.complex128) - want)
    assert np.all(err <= 256 * EPS * np.maximum(np.abs(want), 1)), float(np.max(err))


@pytest.mark.parametrize("dims", [(), (0,), (1,), (3, 0)])
def test_scalar_empty_and_size_one_shapes(dims):
    n = int(np.prod(dims))
    a = random_values("c64", n, np.random.default_rng(32), 1.0).reshape(dims)
    b = Builder("small")
    x = b.parameter(shape.array("c64", dims))
    module = b.build(b.add(b.log(b.exponential(x)), b.power(x, b.sign(x))))
    got, want = _run(module, [a])
    assert got.shape == want.shape == dims
    np.testing.assert_allclose(got, want, rtol=16 * EPS)
