"""What the conformance suite should expect of tpusim: tolerances that follow from the hardware.

Under precision DEFAULT the matrix unit rounds both inputs of a dot or convolution to bf16 (8
significant bits, unit roundoff u = 2**-8), so each product carries a relative error up to 2u and
a sum of K products with random signs an error of about ``2u / sqrt(3) * sqrt(sum (a_i b_i)^2)``.
The suite's linear-algebra cases draw inputs in [-2, 2] and contract at most 32 terms, so
``atol = 4 sigma`` of that (about 0.1) with ``rtol = 2u`` covers them; f32 and f16 inputs get it
(bf16 and float8 inputs are exact in bf16, so the suite's defaults hold). Under HIGHEST the
simulator computes in f32 and the suite's f32 tolerances hold; ``dot_tolerance`` gives the
tolerance for other sizes and precisions, used by this plugin's own tests.
"""

from __future__ import annotations

import math

BF16_UNIT_ROUNDOFF = 2.0**-8
_SUITE_MAX_ABS = 2.0
_SUITE_MAX_K = 32


def dot_tolerance(precision: str, k: int, max_abs: float = 1.0) -> tuple[float, float]:
    """(rtol, atol) of a tpusim contraction of length ``k`` over inputs bounded by ``max_abs``."""
    if precision.upper() in ("HIGH", "HIGHEST"):
        u = 2.0**-24 if precision.upper() == "HIGHEST" else 2.0**-16
        return 4 * u * math.sqrt(max(k, 1)), 4 * u * max_abs * max_abs * math.sqrt(max(k, 1))
    sigma = 2 * BF16_UNIT_ROUNDOFF / math.sqrt(3) * max_abs * max_abs * math.sqrt(max(k, 1))
    return 2 * BF16_UNIT_ROUNDOFF, 4 * sigma


def conformance_profile():
    from hlort.plugin.conformance_profile import ConformanceProfile, Tolerance

    rtol, atol = dot_tolerance("DEFAULT", _SUITE_MAX_K, _SUITE_MAX_ABS)
    bf16_inputs = Tolerance(ulp=4, rtol=rtol, atol=atol)
    return ConformanceProfile(
        tolerances={
            "dot:f32": bf16_inputs,
            "dot:f16": bf16_inputs,
            "convolution:f32": bf16_inputs,
            "convolution:f16": bf16_inputs,
        },
    )
