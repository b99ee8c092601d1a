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
        return np.cbrt(x)
    root = np.cbrt(np.abs(x)) * np.exp(1j * (np.angle(x) / 3))
    return np.where(x == 0, 0, root)


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
