"""select, clamp and map on the reference interpreter."""

import numpy as np
import pytest
from elementwise_helpers import BF16, NAN, param, run, same

from hlort import Builder, dtypes, evaluate, shape
from hlort.errors import ErrorCode, HlortError
from hlort.ir import Opcode

# No op may leak a NumPy RuntimeWarning: IEEE special values are results, not errors.
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def sample(dtype, dims):
    n = int(np.prod(dims))
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return (np.arange(n) % 3 == 0).reshape(dims)
    values = np.arange(n) % 7
    return (values + (0.5j if dt.kind == "c" else 0)).astype(dt).reshape(dims)


# -- select -----------------------------------------------------------------------------------
def select(b, p, t, f):
    return b.select(p, t, f)


@pytest.mark.parametrize("dtype", dtypes.ALL_DTYPES, ids=str)
def test_select_every_type(dtype):
    for dims in ((2, 3), (), (0,)):
        t = sample(dtype.numpy, dims)
        f = np.flip(t).copy() if dims == (0,) else np.flip(t.reshape(-1)).reshape(dims)
        p = (np.arange(int(np.prod(dims))) % 2 == 0).reshape(dims)
        same(run(select, p, t, f), np.where(p, t, f))


def test_select_keeps_signed_zero_and_nan():
    p = np.array([True, False, True])
    t = np.array([-0.0, 1.0, NAN], np.float32)
    f = np.array([0.0, -0.0, 2.0], np.float32)
    same(run(select, p, t, f), np.array([-0.0, -0.0, NAN], np.float32))


def test_select_with_scalar_predicate():
    t = np.array([1, 2, 3], np.int16)
    f = np.array([4, 5, 6], np.int16)
    same(run(select, np.array(True), t, f), t)
    same(run(select, np.array(False), t, f), f)


# -- clamp ------------------------------------------------------------------------------------
def clamp(b, lo, x, hi):
    return b.clamp(lo, x, hi)


def test_clamp_floats():
    x = np.array([-5.0, 0.5, 5.0, NAN, -0.0, 0.0], np.float32)
    lo = np.array([-1.0, -1.0, -1.0, -1.0, 0.0, -0.0], np.float32)
    hi = np.array([1.0, 1.0, 1.0, 1.0, 0.0, 0.0], np.float32)
    same(run(clamp, lo, x, hi), np.array([-1.0, 0.5, 1.0, NAN, 0.0, 0.0], np.float32))
    same(
        run(
            clamp,
            np.array(NAN, np.float32),
            np.array([1.0, 2.0], np.float32),
            np.array(3.0, np.float32),
        ),
        np.array([NAN, NAN], np.float32),
    )
    same(
        run(clamp, np.array(0.0, BF16), np.array([-2.0, 0.5, 9.0], BF16), np.array(1.0, BF16)),
        np.array([0.0, 0.5, 1.0], BF16),
    )


def test_clamp_integers_and_scalar_bounds():
    x = np.array([0, 100, 200, 255], np.uint8)
    same(
        run(clamp, np.array(10, np.uint8), x, np.array(200, np.uint8)),
        np.array([10, 100, 200, 200], np.uint8),
    )
    s = np.array([-(2**63), 0, 2**63 - 1], np.int64)
    same(run(clamp, np.array(-5, np.int64), s, np.array(5, np.int64)), np.array([-5, 0, 5]))
    # low > high gives high: min(max(x, low), high)
    same(
        run(clamp, np.array(3, np.int32), np.array([0, 9], np.int32), np.array(1, np.int32)),
        np.array([1, 1], np.int32),
    )


def test_clamp_empty_and_scalar():
    same(run(clamp, np.array(0.0), np.zeros(0), np.array(1.0)), np.zeros(0))
    same(run(clamp, np.array(0.0), np.array(7.0), np.array(1.0)), np.array(1.0))


# -- map --------------------------------------------------------------------------------------
def mapped(args, body, param_dtypes=None):
    """map(args) with ``body(sub_builder, *scalar_params)`` as the computation."""
    b = Builder("t")
    params = [param(b, a) for a in args]
    sub = b.sub("body")
    scalars = [
        sub.parameter(shape.scalar(dtypes.from_numpy(d or a.dtype)))
        for a, d in zip(args, param_dtypes or [None] * len(args), strict=True)
    ]
    comp = sub.finish(body(sub, *scalars))
    return evaluate(b.build(b.map(params, comp)), list(args))


def test_map_add():
    a = np.array([[1.0, 2.0], [3.0, NAN]], np.float32)
    c = np.array([[10.0, 20.0], [30.0, 1.0]], np.float32)
    same(mapped([a, c], lambda s, x, y: s.add(x, y)), a + c)


def test_map_with_constants_and_mixed_types():
    x = np.array([1, -2, 3, 0], np.int32)
    y = np.array([0.5, 0.5, -1.0, 2.0], np.float32)

    def body(s, i, f):
        scaled = s.mul(s.convert(i, "f32"), s.constant(2.0))
        return s.compare(s.add(scaled, f), s.constant(0.0), "GT")

    same(mapped([x, y], body), (x * 2.0 + y) > 0)


def test_map_select_inside_body():
    x = np.array([-3.0, 0.0, 2.0, -0.0])

    def relu(s, v):
        zero = s.constant(0.0, "f64")
        return s.select(s.compare(v, zero, "GT"), v, zero)

    same(mapped([x], relu), np.array([0.0, 0.0, 2.0, 0.0]))


def test_map_scalar_empty_and_constant_body():
    same(mapped([np.array(3, np.int8)], lambda s, v: s.mul(v, v)), np.array(9, np.int8))
    empty = np.zeros((0, 2), np.float32)
    same(mapped([empty], lambda s, v: s.exp(v)), empty)
    got = mapped([np.zeros((2, 2), np.float32)], lambda s, v: s.constant(7, "s32"))
    same(got, np.full((2, 2), 7, np.int32))


def test_map_of_map():
    x = np.array([1.0, 2.0, 3.0])
    b = Builder("t")
    p = param(b, x)
    inner = b.sub("inner")
    v = inner.parameter(shape.scalar("f64"))
    inner_comp = inner.finish(inner.negate(v))
    outer = b.sub("outer")
    w = outer.parameter(shape.scalar("f64"))
    outer_comp = outer.finish(outer.map([w], inner_comp))
    same(evaluate(b.build(b.map([p], outer_comp)), [x]), -x)


def test_map_rejects_non_elementwise_body():
    b = Builder("t")
    p = param(b, np.zeros(3, np.float32))
    sub = b.sub("body")
    v = sub.parameter(shape.scalar("f32"))
    comp = sub.finish(sub.reshape(sub.broadcast(v, [1], []), []))
    m = b.build(b.map([p], comp))
    with pytest.raises(HlortError) as err:
        evaluate(m, [np.zeros(3, np.float32)])
    assert err.value.code is ErrorCode.UNIMPLEMENTED and "elementwise" in str(err.value)


def test_map_builder_checks_signature():
    b = Builder("t")
    p = param(b, np.zeros(3, np.float32))
    sub = b.sub("body")
    v = sub.parameter(shape.scalar("s32"))
    comp = sub.finish(v)
    with pytest.raises(HlortError) as err:
        b.map([p], comp)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert Opcode.MAP.value in str(err.value) and "f32[]" in str(err.value)
