"""Helpers the elementwise interpreter tests share: build-and-evaluate one op on parameters, and a
strict comparison (dtype, shape, NaN positions and the sign of every zero)."""

import ml_dtypes
import numpy as np

from hlort import Builder, dtypes, evaluate, shape
from hlort.errors import HlortError

BF16 = ml_dtypes.bfloat16
E4M3 = ml_dtypes.float8_e4m3fn
E5M2 = ml_dtypes.float8_e5m2
NAN, INF = float("nan"), float("inf")


def int_kind(np_dtype) -> str | None:
    """ "i" / "u" for signed / unsigned integer NumPy dtypes, ml_dtypes' int4/uint4 included
    (their NumPy kind is "V"); None otherwise."""
    try:
        dt = dtypes.from_numpy(np_dtype)
    except HlortError:  # not an hlort element type
        return None
    if dt.is_integer:
        return "i" if dt.is_signed_integer else "u"
    return None


def param(b: Builder, a: np.ndarray):
    """A parameter of ``b`` with the element type and dims of the array ``a``."""
    return b.parameter(shape.array(dtypes.from_numpy(a.dtype), a.shape))


def run(op, *args, **attrs):
    """Evaluate ``op`` (an Opcode or ``fn(builder, *params)``) on parameters shaped like args."""
    b = Builder("t")
    params = [param(b, a) for a in args]
    root = op(b, *params) if callable(op) else b.op(op, params, **attrs)
    return evaluate(b.build(root), list(args))


def same(got, expected):
    """Equal values, dtypes and shapes; NaN matches NaN and the sign of zero must match."""
    expected = np.asarray(expected)
    assert isinstance(got, np.ndarray)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (got, expected)
    g, e = got.astype(np.complex128).ravel(), expected.astype(np.complex128).ravel()
    for part in (np.real, np.imag):
        gp, ep = part(g), part(e)
        assert np.array_equal(gp, ep, equal_nan=True), (got, expected)
        signs_agree = (np.signbit(gp) == np.signbit(ep)) | np.isnan(ep)
        assert signs_agree.all(), ("sign of zero", got, expected)
