"""exp on f32 where it underflows: inputs clamp to -176, where the scaling is by
2^-127 * 2^-127 = 0 * 0, so underflowing lanes make no subnormal products (microcode-slow on
x86). Across the underflow edge (subnormal results, the last nonzero, zeros, -inf, NaN) zeros,
infinities and NaN are where the interpreter has them and the rest within exp's f32 bound of
test_transcendental_ulp.py (2 ulp; bits of nonnegative floats are ordered, so a difference of
bits counts ulps, subnormals too)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llvmlite")

import hlort  # noqa: E402
from hlort import Builder, shape  # noqa: E402

EDGE = [
    -np.inf,
    -3.4028235e38,
    -1e30,
    -200.0,
    -176.1,
    -176.0,
    -175.9,
    -150.0,
    -104.5,
    -104.0,
    -103.98,
    -103.97,
    -103.9,
]
EDGE += [-103.28, -100.0, -95.0, -87.5, -87.33, -87.0, -0.0, 0.0, 88.7, 89.0, np.inf, np.nan]


@pytest.mark.parametrize("size", [1, 7, 64, 1000])
def test_exp_f32_underflow_matches_the_interpreter(size):
    rng = np.random.default_rng(size)
    x = np.concatenate(
        [np.array(EDGE, np.float32), rng.uniform(-120, -80, 4000).astype(np.float32)]
    )
    x = np.resize(x, max(size, len(x)))[: max(size, len(x))]
    b = Builder("exp_underflow")
    p = b.parameter(shape.array("f32", x.shape))
    module = b.build(b.exponential(p))
    got = np.asarray(hlort.compile(module, "cpu")(x))
    want = np.asarray(hlort.evaluate(module, [x]))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    exact = np.isnan(want) | np.isinf(want) | (want == 0) | (x < -104)
    np.testing.assert_array_equal(got[exact & ~np.isnan(want)], want[exact & ~np.isnan(want)])
    assert (got[x < -104] == 0).all() and not np.signbit(got[x < -104]).any()
    ulps = np.abs(got.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    assert ulps[~exact].max(initial=0) <= 2
