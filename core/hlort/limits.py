"""Bounds on what one program text may ask hlort to build, checked before the work is done.

Program text is untrusted input: a few bytes can claim a 2,000-deep tuple type, a result count of
2^62 or a splat constant of 2^40 elements. The parsers and importers check these bounds first and
answer INVALID_ARGUMENT instead of recursing, looping or allocating without limit: a program
over a bound is input its author can fix (or the bound can be raised), not a device running out.
The bounds are far above what compilers emit and can be raised through the environment for the
rare program that needs more.

- ``HLORT_MAX_NESTING`` (default 100): brackets nested inside each other in HLO or MLIR text
  (tuple shapes, types, regions, attribute lists). Deeper text is refused with its line:col.
- ``HLORT_MAX_RESULTS`` (default 65,536): results one MLIR op may declare (``%0:N``).
- ``HLORT_MAX_CONSTANT_BYTES`` (default 1 GiB): the bytes one constant stands for, splat or not.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hlort.errors import InvalidArgument

_DEFAULTS = {
    "HLORT_MAX_NESTING": 100,
    "HLORT_MAX_RESULTS": 1 << 16,
    "HLORT_MAX_CONSTANT_BYTES": 1 << 30,
}


def _read(name: str) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return _DEFAULTS[name]
    try:
        value = int(raw, 0)
    except ValueError:
        raise InvalidArgument(
            f"{name}={raw!r} is not an integer; unset it or give a "
            f"positive whole number (default {_DEFAULTS[name]})"
        ) from None
    if value <= 0:
        raise InvalidArgument(f"{name}={raw!r} must be positive (default {_DEFAULTS[name]})")
    return value


def max_nesting() -> int:
    """How deeply brackets may nest in program text."""
    return _read("HLORT_MAX_NESTING")


def max_results() -> int:
    """How many results one MLIR operation may declare."""
    return _read("HLORT_MAX_RESULTS")


def max_constant_bytes() -> int:
    """How many bytes one constant of a program may stand for."""
    return _read("HLORT_MAX_CONSTANT_BYTES")


def check_constant_size(
    nbytes: int, what: str, fail: Callable[[str], Exception] = InvalidArgument
) -> None:
    """Refuse a constant larger than the limit, before anything is allocated for it.
    ``fail(message)`` builds the INVALID_ARGUMENT error (a parser passes one naming line:col)."""
    limit = max_constant_bytes()
    if nbytes > limit:
        raise fail(
            f"{what} stands for {nbytes:,} bytes, over the {limit:,}-byte limit for one "
            "constant; pass the data as a parameter, or raise HLORT_MAX_CONSTANT_BYTES"
        )
