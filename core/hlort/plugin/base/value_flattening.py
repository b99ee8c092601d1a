"""Values at the executable boundary: nested tuples of arrays <-> the flat list of array leaves.

The plugin API passes flat lists of arrays (one per array leaf of the parameters and the
result, depth first); the reference interpreter and a backend's own programs take and give
tuple-shaped values. These two functions convert between the forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hlort.shape import Shape, Token, TokenShape, TupleShape


def unflatten(shapes: Sequence[Shape], flat: Sequence[Any]) -> list[Any]:
    """Rebuild (possibly tuple-shaped) parameter values from flattened leaves."""
    it = iter(flat)

    def build(shape: Shape):
        if isinstance(shape, TupleShape):
            return tuple(build(s) for s in shape.elements)
        if isinstance(shape, TokenShape):
            return Token()
        return next(it)

    return [build(s) for s in shapes]


def flatten_value(value: Any) -> list[np.ndarray]:
    """A result value's array leaves, depth first (tokens dropped)."""
    if isinstance(value, tuple):
        out: list[np.ndarray] = []
        for v in value:
            out += flatten_value(v)
        return out
    if isinstance(value, Token):
        return []
    return [value]
