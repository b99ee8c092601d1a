"""Interpreter: exponentials, logarithms, roots, trigonometry, atan2 and power.

Every float or complex type is evaluated in f64/c128 and rounded once to the result type (narrow
types through f32, like XLA's upcast), so the oracle is as accurate as NumPy's f64 functions.
Complex functions follow C99 Annex G (NumPy), except where XLA defines a value NumPy does not
(x ** 0 = 1, 1 ** y = 1, cbrt as the principal root).
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.ops.float_rounding import apply_wide, is_complex
from hlort.interpreter.ops.integer_arith import power_int
from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode


def logistic(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), written so that neither branch overflows for large |x|."""
    if is_complex(x.dtype):
        return 1 / (1 + np.exp(-x))
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def rsqrt(x: np.ndarray) -> np.ndarray:
    """1 / sqrt(x): rsqrt(+0) = +inf, rsqrt(-0) = -inf, rsqrt(x < 0) = NaN."""
    return 1 / np.sqrt(x)


def cbrt(x: np.ndarray) -> np.ndarray:
    """Real cube root (cbrt(-8) = -2); for complex, the principal root |z|^(1/3) e^(i arg(z)/3)."""
    if not is_complex(x.dtype):
        return cbrt_real(x)
    root = cbrt_real(np.abs(x)) * np.exp(1j * (np.angle(x) / 3))
    return np.where(x == 0, 0, root)


_SPLIT = 134217729.0  # 2**27 + 1: Veltkamp's split of an f64 into two 26-bit halves


def _two_prod(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p, e) with p = fl(a * b) and p + e = a * b exactly (Dekker; no fma in NumPy)."""
    p = a * b
    ca, cb = _SPLIT * a, _SPLIT * b
    ah, bh = ca - (ca - a), cb - (cb - b)
    al, bl = a - ah, b - bh
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def cbrt_real(x: np.ndarray) -> np.ndarray:
    """The f64 cube root, correct to within a hair of half an ulp on every machine.

    C libraries' cbrt differs between machines and errs by up to 3-4 ulp (glibc's own tables
    say so; seen: 2.6 ulp at -1.8379671022484817e+80), more than the compiled kernels it is
    the reference for. So NumPy's root is refined by one Newton step on the exact residual:
    x = m 2^(3k) with m in [0.5, 4) (exact scalings), a = m - z^3 in double-double, then
    z + a / (3 z^2), rounded once. Zeros, infinities and NaN are NumPy's.
    """
    x = np.asarray(x, np.float64)
    with np.errstate(all="ignore"):
        root = np.cbrt(x)
        ok = np.isfinite(x) & (x != 0)
        if not ok.any():
            return root
        mantissa, exponent = np.frexp(np.where(ok, x, 1.0))
        rest = np.mod(exponent, 3)
        m = np.ldexp(mantissa, rest)  # |m| in [0.5, 4)
        z = np.cbrt(m)
        sq, sq_err = _two_prod(z, z)
        cube, cube_err = _two_prod(sq, z)
        extra, extra_err = _two_prod(sq_err, z)
        residual = (((m - cube) - cube_err) - extra) - extra_err  # m - cube is exact
        z = z + residual / (3.0 * sq)
        return np.where(ok, np.ldexp(z, (exponent - rest) // 3), root)


def atan2(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """C's atan2 for reals (atan2(+-0, -0) = +-pi, atan2(+-0, +0) = +-0).

    Complex (XLA): -i log((x + i y) / sqrt(x^2 + y^2)).
    """
    if not is_complex(x.dtype):
        return np.arctan2(y, x)
    return -1j * np.log((x + 1j * y) / np.sqrt(x * x + y * y))


def power_float(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C's pow for reals. Complex: XLA's HloEvaluator, i.e. 1 ** y = x ** 0 = 1,
    inf ** (positive real) = inf, inf ** (negative real) = 0, else the principal value.
    """
    r = np.power(a, b)
    if not is_complex(a.dtype):
        return r
    pos_inf = np.isposinf(a.real) & (a.imag == 0)
    r = np.where(pos_inf & (b.imag == 0) & (b.real > 0), a, r)
    r = np.where(pos_inf & (b.imag == 0) & (b.real < 0), 0, r)
    return np.where((a == 1) | (b == 0), 1, r)


_UNARY = {
    Opcode.EXP: np.exp,
    Opcode.EXPM1: np.expm1,
    Opcode.LOG: np.log,  # log(-1) = NaN, log(0) = -inf
    Opcode.LOG1P: np.log1p,
    Opcode.LOGISTIC: logistic,
    Opcode.SQRT: np.sqrt,  # sqrt(-0) = -0
    Opcode.RSQRT: rsqrt,
    Opcode.CBRT: cbrt,
    Opcode.TANH: np.tanh,
    Opcode.SINE: np.sin,
    Opcode.COSINE: np.cos,
    Opcode.TAN: np.tan,
}


@evaluates(*_UNARY)
def _unary(ev, instr, x):
    return apply_wide(_UNARY[instr.opcode], x.dtype, x)


@evaluates(Opcode.ATAN2)
def _atan2(ev, instr, y, x):
    return apply_wide(atan2, x.dtype, y, x)


@evaluates(Opcode.POWER)
def _power(ev, instr, a, b):
    if a.dtype.kind in "iu":
        return power_int(a, b)
    return apply_wide(power_float, a.dtype, a, b)
