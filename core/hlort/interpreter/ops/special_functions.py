"""Interpreter: erf, vectorized in f64 without scipy or a per-element libm call.

Rational approximations of S. L. Moshier's Cephes library (coefficients are the published minimax
fits; the code is ours):
  |x| < 1:      erf(x)  = x T(x^2) / U(x^2)
  1 <= |x| < 8: erfc(x) = exp(-x^2) P(|x|) / Q(|x|),  erf = sign(x) (1 - erfc)
  |x| >= 8:     erf(x)  = sign(x)  (erfc(8) ~ 1e-29 is far below half an ulp of 1)
exp(-x^2) is computed as exp(-m^2) exp(-(x - m)(x + m)) with m = x rounded to 1/128, whose square
is exact, so the error of squaring x is not amplified. Relative error stays near 1e-16.
Narrower types are computed in f64 and rounded.
"""

from __future__ import annotations

import numpy as np

from hlort.interpreter.ops.float_rounding import apply_wide
from hlort.interpreter.registry import evaluates
from hlort.ir.opcodes import Opcode

_T = (
    9.60497373987051638749e0,
    9.00260197203842689217e1,
    2.23200534594684319226e3,
    7.00332514112805075473e3,
    5.55923013010394962768e4,
)
_U = (
    1.0,
    3.35617141647503099647e1,
    5.21357949780152679795e2,
    4.59432382970980127987e3,
    2.26290000613890934246e4,
    4.92673942608635921086e4,
)
_P = (
    2.46196981473530512524e-10,
    5.64189564831068821977e-1,
    7.46321056442269912687e0,
    4.86371970985681366614e1,
    1.96520832956077098242e2,
    5.26445194995477358631e2,
    9.34528527171957607540e2,
    1.02755188689515710272e3,
    5.57535335369399327526e2,
)
_Q = (
    1.0,
    1.32281951154744992508e1,
    8.67072140885989742329e1,
    3.54937778887819891062e2,
    9.75708501743205489753e2,
    1.82390916687909736289e3,
    2.24633760818710981792e3,
    1.65666309194161350182e3,
    5.57535340817727675546e2,
)


def polynomial(x: np.ndarray, coefficients: tuple[float, ...]) -> np.ndarray:
    """Horner's rule, highest degree first (loops over coefficients, not elements)."""
    acc = np.full(np.shape(x), coefficients[0])
    for c in coefficients[1:]:
        acc = acc * x + c
    return acc


def exp_minus_square(x: np.ndarray) -> np.ndarray:
    """exp(-x*x) for x >= 0 without the rounding error of x*x (Cephes' expx2 idea)."""
    m = np.round(x * 128.0) / 128.0
    return np.exp(-m * m) * np.exp(-(x - m) * (x + m))


def erf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    ax = np.abs(x)
    with np.errstate(all="ignore"):
        small = x * polynomial(x * x, _T) / polynomial(x * x, _U)
        mid = np.clip(ax, 1.0, 8.0)
        erfc = exp_minus_square(mid) * polynomial(mid, _P) / polynomial(mid, _Q)
        large = np.copysign(np.where(ax >= 8.0, 1.0, 1.0 - erfc), x)
    return np.where(ax < 1.0, small, np.where(np.isnan(x), x, large))


@evaluates(Opcode.ERF)
def _erf(ev, instr, x):
    return apply_wide(erf, x.dtype, x)
