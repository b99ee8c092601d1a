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
exact zero and an input has a zero or non-finite part (signed-zero arithmetic, which the f32
forms repeat); elsewhere a zero is a cancellation or an underflow, its sign set by rounding.
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


def check(got, want, exact, allowed, inputs, what):
    g_nan, w_nan = np.isnan(got), np.isnan(want)
    bad = g_nan != w_nan
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
    check(got.real, want.real, exact.real, allowed_re, args, f"{op} real part")
    check(got.imag, want.imag, exact.imag, allowed_im, args, f"{op} imaginary part")
