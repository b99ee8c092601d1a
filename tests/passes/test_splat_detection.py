"""splat(): the exact bitwise answer, whether or not the strided sample decides it."""

from __future__ import annotations

import numpy as np
import pytest

from hlort.builder import Builder
from hlort.passes.rewriter import splat


def _constant(value: np.ndarray):
    b = Builder("s")
    c = b.constant(value)
    b.build(c)
    return c


@pytest.mark.parametrize("where", [0, 1, 500, 999])
def test_one_differing_element_anywhere_is_not_a_splat(where):
    data = np.full(1000, 7, np.int32)
    data[where] = 8
    assert splat(_constant(data)) is None


def test_splats_are_bitwise():
    nan = splat(_constant(np.full(300, np.nan, np.float32)))
    assert nan is not None and np.isnan(nan) and nan.shape == ()
    assert splat(_constant(np.array([0.0, -0.0], np.float32))) is None
    assert splat(_constant(np.full((3, 5), -0.0, np.float64))) == 0.0
    assert splat(_constant(np.zeros(0, np.float32))) is None
