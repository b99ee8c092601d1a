"""Checks of the integer-list attributes shape rules read (``dimensions``, slice sizes, the lists
inside dot, gather and scatter dimension numbers, ``fft_length``).

Attributes reach the rules from the builder, the text parser and the importers, so a rule cannot
assume their Python types: anything that is not a sequence of integers fails as
INVALID_ARGUMENT naming the attribute, never as a TypeError from ``len`` or ``iter``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.ir.shape_inference import ShapeQuery


def integer_tuple(q: ShapeQuery, value, what: str) -> tuple[int, ...]:
    """``value`` as a tuple of ints; INVALID_ARGUMENT unless it is a sequence (or 1-d array) of
    integers. Strings, bools and floats are not integers here."""
    is_list = isinstance(value, Sequence) and not isinstance(value, (str, bytes))
    is_vector = isinstance(value, np.ndarray) and value.ndim == 1
    if not (is_list or is_vector) or not all(_is_integer(d) for d in value):
        q.fail(f"{what}={value!r} must be a sequence of integers")
    return tuple(int(d) for d in value)


def _is_integer(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_dimension_list(
    q: ShapeQuery, dims, rank: int, what: str, of: str, ascending: bool = False
) -> tuple[int, ...]:
    """``dims`` as a tuple of ints, each in [0, rank), unique (and ascending if ``ascending``).

    ``of`` names the array whose dimensions these are, for the error messages.
    """
    dims = integer_tuple(q, dims, what)
    for d in dims:
        if not 0 <= d < rank:
            q.fail(f"{what}={list(dims)} has dimension {d}, out of range for rank {rank} of {of}")
    if len(set(dims)) != len(dims):
        q.fail(f"{what}={list(dims)} repeats a dimension of {of}")
    if ascending and list(dims) != sorted(dims):
        q.fail(f"{what}={list(dims)} must be in ascending order")
    return dims
