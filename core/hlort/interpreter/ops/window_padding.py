"""The base a windowed op slides its window over: the operand with base-dilation holes between
its elements and padding at its edges (negative padding crops).

Reduce-window, select-and-scatter and convolution all start from this base; what fills the holes
and the padding is theirs to say (the reducer's identity, -1 for "no index", zero).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.ir.attributes import WindowDim
from hlort.ir.shape_rules.convolution import dilated_bound


def dilate_and_pad(x: np.ndarray, window: Sequence[WindowDim], fill) -> np.ndarray:
    """``x`` with base-dilation holes and padding, both filled with ``fill``; ``window`` has one
    entry per dimension of ``x``."""
    shape, dst, src = [], [], []
    for d, w in zip(x.shape, window, strict=True):
        b, lo = w.base_dilation, w.padding_low
        size = dilated_bound(d, b) + lo + w.padding_high
        first = max(0, -(lo // b)) if lo < 0 else 0  # first source index landing at >= 0
        stop = min(d, -((lo - size) // b)) if size > lo else 0  # landing below `size`
        stop = max(stop, first)
        shape.append(size)
        src.append(slice(first, stop))
        dst.append(slice(lo + first * b, lo + (stop - 1) * b + 1 if stop > first else 0, b))
    out = np.full(shape, fill, dtype=x.dtype)
    out[tuple(dst)] = x[tuple(src)]
    return out
