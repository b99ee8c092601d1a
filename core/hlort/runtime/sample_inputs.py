"""Deterministic random arguments of given shapes, for ``hlort run`` without ``--inputs``.

Values are small (normal floats, integers in [-5, 5], [0, 9] unsigned) so they exercise real
arithmetic without overflowing; the same seed always gives the same arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.shape import ArrayShape


def random_array(shape: ArrayShape, rng: np.random.Generator) -> np.ndarray:
    dtype = shape.dtype
    dims = shape.dims
    if dtype.is_pred:
        return rng.integers(0, 2, size=dims).astype(np.bool_)
    if dtype.is_signed_integer:
        return rng.integers(-5, 6, size=dims).astype(dtype.numpy)
    if dtype.is_unsigned_integer:
        return rng.integers(0, 10, size=dims).astype(dtype.numpy)
    if dtype.is_complex:
        real = rng.standard_normal(dims)
        imag = rng.standard_normal(dims)
        return (real + 1j * imag).astype(dtype.numpy)
    return np.asarray(rng.standard_normal(dims)).astype(dtype.numpy)


def random_inputs(shapes: Sequence[ArrayShape], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    # order="C", not np.ascontiguousarray: that one turns a scalar (0-d) into shape (1,)
    return [np.asarray(random_array(s, rng), order="C") for s in shapes]
