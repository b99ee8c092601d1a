"""Calling a computation on scalars with whole arrays.

Reducers, comparators and select/scatter functions are computations on scalars. Their ops are
elementwise, so calling them once with arrays of a common shape computes every element at once;
that is how the interpreter stays vectorized for ops that take a computation. Inside such a call
the evaluator's per-instruction shape check is off (every value carries the extra dims); the
element types of the results are still checked here. Ops that change shapes (a reshape or
broadcast of a parameter) cannot carry the extra dims; such computations raise UNIMPLEMENTED.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hlort.errors import Internal, Unimplemented
from hlort.ir.computation import Computation


def call_on_arrays(
    ev, comp: Computation, args: Sequence[np.ndarray], shape: tuple[int, ...]
) -> list[np.ndarray]:
    """Apply ``comp`` elementwise to ``args`` (arrays of ``shape``, one per scalar parameter).

    Returns the results as a list (a tuple root gives one entry per element), each an array of
    ``shape`` with the element type of the corresponding scalar result.
    """
    saved = ev.check_shapes
    ev.check_shapes = False
    try:
        result = ev.call(comp, list(args))
    except ValueError as err:  # NumPy refusing extra dims: a reshape or broadcast of a parameter
        raise Unimplemented(
            f"computation {comp.name} cannot be applied to whole arrays (it has an op that is "
            f"not elementwise on its parameters): {err}"
        ) from err
    finally:
        ev.check_shapes = saved
    values = list(result) if isinstance(result, tuple) else [result]
    expected = comp.root.shape.leaf_shapes()
    if len(values) != len(expected):
        raise Internal(f"{comp.name} gave {len(values)} result(s), expected {len(expected)}")
    out = []
    for value, want in zip(values, expected, strict=True):
        arr = np.asarray(value)
        if arr.dtype != want.dtype.numpy:
            raise Internal(f"{comp.name} gave {arr.dtype} where its signature says {want}")
        out.append(np.broadcast_to(arr, shape))
    return out
