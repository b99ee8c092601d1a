"""One dot_general compiled for cpu on random operands (NaN, +-inf, -0.0 and a subnormal among
them when ``special``), shared by the dot path tests (test_small_dot.py, test_narrow_dot.py)."""

from __future__ import annotations

import math

import numpy as np

import hlort
from hlort import Builder, dtypes, shape


def dot_values(dt, dims, rng, special: bool) -> np.ndarray:
    values = rng.standard_normal(dims)
    if dt.is_complex:
        values = values + 1j * rng.standard_normal(dims)
    if dt.is_integer:
        values = rng.integers(-50, 50, dims)
    flat = values.reshape(-1)
    if special and flat.size >= 8:  # spread over rows and columns
        picks = rng.choice(flat.size, 5, replace=False)
        flat[picks] = [np.nan, np.inf, -np.inf, -0.0, 1e-310 if dt.name == "f64" else 1e-40]
    return values.astype(dt.numpy)


def dot_module(dtype, lhs_dims, rhs_dims, dn):
    b = Builder("dot")
    x = b.parameter(shape.array(dtype, list(lhs_dims)))
    y = b.parameter(shape.array(dtype, list(rhs_dims)))
    return b.build(b.dot_general(x, y, dn))


def run_dot(dtype, case, special, seed: int):
    """(module, [a, b], result, k, executable stats) of ``case`` = (lhs dims, rhs dims, dn)."""
    lhs_dims, rhs_dims, dn = case
    rng = np.random.default_rng(seed)
    dt = dtypes.from_hlo_name(dtype)
    a, b = dot_values(dt, lhs_dims, rng, special), dot_values(dt, rhs_dims, rng, special)
    module = dot_module(dtype, lhs_dims, rhs_dims, dn)
    exe = hlort.compile(module, "cpu")
    got = np.asarray(exe(a, b))
    k = math.prod(lhs_dims[d] for d in dn.lhs_contracting_dims)
    return module, [a, b], got, k, exe.raw.stats()
