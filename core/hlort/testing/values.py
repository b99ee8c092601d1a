"""Input values for op cases: random arrays salted with each element type's edge values.

Edge values are where backends and the reference part ways: NaN, +-inf, -0.0, the largest and
the smallest (subnormal) magnitudes, rounding ties, and integer extremes. ``mixed`` puts them
at the front of an otherwise random array, so every case of a large-enough shape meets them;
``edge_grid`` pairs every edge value with every other one for binary ops.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np

from hlort.dtypes import DType, iinfo


def seed_for(case_id: str) -> int:
    """A stable seed per case, so a failure reproduces with the same inputs."""
    return zlib.crc32(case_id.encode())


def rng_for(case_id: str) -> np.random.Generator:
    return np.random.default_rng(seed_for(case_id))


def _finfo(dt: DType):
    return ml_dtypes.finfo(dt.numpy)


def edge_values(dt: DType) -> np.ndarray:
    """The edge values of ``dt``, as a 1-D array of that type."""
    if dt.is_pred:
        return np.array([False, True])
    if dt.is_integer:
        info = iinfo(dt)
        vals = {0, 1, 2, 7, info.max, info.max - 1, info.min}
        if dt.is_signed_integer:
            vals |= {-1, -2, info.min + 1}
        return np.array(sorted(vals), dtype=dt.numpy)
    if dt.is_complex:
        parts = edge_values(dt.component)
        parts = parts[np.isfinite(parts.astype(np.float64))][:6]
        specials = [complex(np.nan, 0), complex(0, np.inf), complex(-np.inf, 1), complex(1, -0.0)]
        grid = [complex(r, i) for r in parts[:4] for i in parts[:4]] + specials
        return np.array(grid, dtype=dt.numpy)
    fi = _finfo(dt)
    vals = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        2.5,
        -2.5,
        3.0,
        float(fi.max),
        -float(fi.max),
        float(fi.smallest_normal),
        float(fi.smallest_subnormal),
        -float(fi.smallest_subnormal),
        float(np.nan),
    ]
    if dt.name != "f8e4m3fn":  # the only type here without infinities
        vals += [float(np.inf), float(-np.inf)]
    return np.array(vals, dtype=np.float64).astype(dt.numpy)


def random_values(
    dt: DType,
    shape: tuple[int, ...],
    rng: np.random.Generator,
    low: float | None = None,
    high: float | None = None,
) -> np.ndarray:
    """Random finite values of ``dt``: full range for integers unless bounded; floats near 1."""
    if dt.is_pred:
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.is_integer:
        info = iinfo(dt)
        lo = info.min if low is None else max(int(low), info.min)
        hi = info.max if high is None else min(int(high), info.max)
        if dt.is_sub_byte_integer:  # NumPy's generator has no 4-bit integers
            return rng.integers(lo, hi, size=shape, dtype=np.int8, endpoint=True).astype(dt.numpy)
        return rng.integers(lo, hi, size=shape, dtype=dt.numpy, endpoint=True)
    if dt.is_complex:
        comp = dt.component
        real = random_values(comp, shape, rng, low, high)
        imag = random_values(comp, shape, rng, low, high)
        return (real + 1j * imag).astype(dt.numpy)
    if low is not None and high is not None:
        values = rng.uniform(low, high, size=shape)
    else:
        values = rng.standard_normal(size=shape) * 3.0
    return values.astype(dt.numpy)


def mixed(dt: DType, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Random values with the edge values of ``dt`` at the front (as many as fit)."""
    out = random_values(dt, shape, rng)
    edges = edge_values(dt)
    flat = out.reshape(-1)
    count = min(len(flat), len(edges))
    flat[:count] = edges[:count]
    return flat.reshape(shape)


def edge_grid(dt: DType) -> tuple[np.ndarray, np.ndarray]:
    """Two [E, E] arrays holding every (edge, edge) pair: rows vary lhs, columns vary rhs."""
    edges = edge_values(dt)
    lhs = np.repeat(edges[:, None], len(edges), axis=1)
    rhs = np.repeat(edges[None, :], len(edges), axis=0)
    return np.ascontiguousarray(lhs), np.ascontiguousarray(rhs)
