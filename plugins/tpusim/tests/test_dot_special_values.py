"""tpusim dots with NaN, +-inf and -0.0 in both operands against the interpreter.

Exact, per real and imaginary part: NaN at the same places, the same infinities, the same sign
of every zero (the matrix unit rounds inputs to bf16, which keeps NaN, infinities and signed
zeros, and accumulates from +0 as the interpreter). Finite elements: within
``conformance_profile.dot_tolerance("DEFAULT", K, max |x|)`` (bf16 inputs; types the matrix
unit does not take come out exact). Operands: lhs row 0 all -0.0 against a positive rhs column
0 (a sum of -0.0 products: +0), +inf against a zero (NaN), +inf and -inf in one row (NaN), a
NaN row, a -inf column.
"""

from __future__ import annotations

import numpy as np
import pytest

import hlort
from hlort import Builder, dtypes, shape
from hlort.ir.attributes import DotDimensionNumbers as Dn
from hlort_tpusim.conformance_profile import dot_tolerance

CASES = {  # id: (batch or None, m, k, n, rhs transposed)
    "small": (None, 6, 9, 7, False),
    "tiles": (None, 64, 200, 130, False),  # more than one 128x128 tile of the matrix unit
    "batched": (3, 6, 9, 7, False),
    "rhs-transposed": (None, 40, 20, 30, True),
}


def _operands(dtype: str, batch, m, k, n, rng):
    a, b = rng.standard_normal((batch or 1, m, k)), rng.standard_normal((batch or 1, k, n))
    b[..., :, 0] = np.abs(b[..., :, 0]) + 0.5
    a[..., 0, :] = -0.0
    a[..., 1, 0], b[..., 0, 1] = np.inf, 0.0
    a[..., 2, 0], a[..., 2, 1] = np.inf, -np.inf
    a[..., 3, k - 1] = np.nan
    b[..., k - 1, n - 1] = -np.inf
    dt = dtypes.from_hlo_name(dtype)
    if dt.is_complex:
        a = a + 1j * np.where(np.arange(m)[:, None] == 0, -0.0, rng.standard_normal((m, k)))
        b = b + 1j * rng.standard_normal((k, n))
    if dt.is_integer:
        a, b = rng.integers(-50, 50, a.shape), rng.integers(-50, 50, b.shape)
    a, b = a.astype(dt.numpy), b.astype(dt.numpy)
    return (a, b) if batch else (a[0], b[0])


def _module(dtype, a, b, batch, transposed):
    builder = Builder("dot")
    x = builder.parameter(shape.array(dtype, list(a.shape)))
    y = builder.parameter(shape.array(dtype, list(b.shape)))
    last = a.ndim - 1
    dn = Dn((last,), (last if transposed else last - 1,))
    if batch:
        dn = Dn((2,), (1,), (0,), (0,))
    return builder.build(builder.dot_general(x, y, dn))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "f16", "f64", "c64", "s32"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_special_values_match_the_interpreter(name, dtype):
    batch, m, k, n, transposed = CASES[name]
    a, b = _operands(dtype, batch, m, k, n, np.random.default_rng(7))
    if transposed:
        b = np.ascontiguousarray(np.swapaxes(b, -1, -2))
    module = _module(dtype, a, b, batch, transposed)
    got = np.asarray(hlort.compile(module, "tpusim")(a, b))
    ref = np.asarray(hlort.evaluate(module, [a, b]))
    assert got.shape == ref.shape and got.dtype == ref.dtype
    if ref.dtype.kind in "iu":
        np.testing.assert_array_equal(got, ref)
        return
    finite_inputs = [np.abs(x[np.isfinite(x)]).max() for x in (a, b)]
    rtol, atol = dot_tolerance("DEFAULT", k, float(max(finite_inputs)))
    pairs = [(got.real, ref.real), (got.imag, ref.imag)] if ref.dtype.kind == "c" else [(got, ref)]
    for g, r in pairs:
        g, r = g.astype(np.float64), r.astype(np.float64)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(r))
        np.testing.assert_array_equal(g[np.isinf(r)], r[np.isinf(r)])
        zero = (g == 0) & (r == 0)
        np.testing.assert_array_equal(np.signbit(g[zero]), np.signbit(r[zero]))
        finite = np.isfinite(r)
        np.testing.assert_allclose(g[finite], r[finite], rtol=rtol, atol=atol)
