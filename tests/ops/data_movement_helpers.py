"""What the data-movement tests share: samples of every element type, bit-exact comparison,
shape-rule rejection checks."""

from __future__ import annotations

import numpy as np
import pytest

from hlort import Builder, dtypes, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import infer_shape

ALL = dtypes.ALL_DTYPES
INDEX_TYPES = ("s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64")


# -- helpers ---------------------------------------------------------------------------------------
def sample(dtype, dims, seed=0) -> np.ndarray:
    """Random values of ``dtype`` (a DType or its name), varied enough to catch misplacement."""
    dt = dtype if isinstance(dtype, dtypes.DType) else dtypes.from_hlo_name(dtype)
    rng = np.random.default_rng(seed)
    dims = tuple(dims)
    if dt.is_pred:
        return rng.random(dims) < 0.5
    if dt.is_integer:
        info = dtypes.iinfo(dt)
        return rng.integers(max(info.min, -100), min(info.max, 100), dims, endpoint=True).astype(
            dt.numpy
        )
    if dt.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dt.numpy)
    return (rng.standard_normal(dims) * 4).astype(dt.numpy)


def same(a, b) -> bool:
    """Same dtype, same dims, same bits."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return bool(
        np.array_equal(
            np.ascontiguousarray(a).reshape(-1).view(np.uint8),
            np.ascontiguousarray(b).reshape(-1).view(np.uint8),
        )
    )


def ints(values, types):
    """Scalar index arrays: ``values[i]`` as HLO type ``types[i]`` (wrapping like C would)."""
    return [
        np.array(v).astype(dtypes.from_hlo_name(t).numpy)
        if v >= 0
        else np.array(v, dtype=dtypes.from_hlo_name(t).numpy)
        for v, t in zip(values, types, strict=True)
    ]


def run(make, *args):
    """Build ``make(b, *params)`` over parameters shaped like ``args`` and evaluate it."""
    b = Builder("t")
    params = [b.parameter(shape.of_value(np.asarray(a))) for a in args]
    module = b.build(make(b, *params))
    return evaluate(module, [np.asarray(a) for a in args])


def invalid(opcode, operands, attrs, declared=None, *fragments):
    """The shape rule rejects these operands with INVALID_ARGUMENT naming all ``fragments``."""
    with pytest.raises(HlortError) as err:
        infer_shape(opcode, operands, attrs, declared)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    text = str(err.value)
    assert opcode.value in text, text
    for f in fragments:
        assert f in text, text


A = shape.array
S = shape.scalar


def dslice(x, starts, sizes, index_types):
    def make(b, p, *idx):
        return b.dynamic_slice(p, idx, sizes)

    return run(make, x, *ints(starts, index_types))
