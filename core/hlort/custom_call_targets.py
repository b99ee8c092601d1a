"""Custom-call targets hlort ships, registered in :mod:`hlort.custom_calls` on first use.

Each is a target real programs contain:

- ``Sharding``, ``SPMDFullToShardShape``, ``SPMDShardToFullShape``: XLA's SPMD partitioner
  annotations (what ``jax.jit`` with shardings and ``shard_map`` emit). On one partition they are
  identities; a shard shape that differs from the full shape needs a partitioned backend.
- ``annotate_device_placement`` (JAX memory kinds), ``MoveToHost`` / ``MoveToDevice`` (XLA host
  offloading): placement hints, identities on values.
- ``AllocateBuffer``: XLA's uninitialized buffer of the declared shape (zeros here).
- ``cu_threefry2x32`` / ``hip_threefry2x32`` (and ``_ffi`` spellings): JAX's GPU Threefry kernel,
  operands (key0, key1, count0, count1) of one u32 shape, result the two output words.
- ``check.expect_eq``, ``check.expect_almost_eq``, ``check.expect_close``, ``check.eq``: the
  StableHLO test-suite assertions used throughout its testdata corpus; a failed expectation raises
  :class:`ExpectationFailed`.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.custom_calls import register_custom_call
from hlort.errors import ErrorCode, HlortError, Unimplemented
from hlort.ir.shape_inference import ShapeQuery
from hlort.shape import ArrayShape, Shape, TupleShape, scalar

# StableHLO's interpreter uses these for the custom-call forms of its checks.
ALMOST_EQ_TOLERANCE = 1e-3
CLOSE_MAX_ULP = 3


class ExpectationFailed(HlortError):
    """A ``check.expect_*`` custom call found the program's result differs from the expected one."""

    default_code = ErrorCode.FAILED_PRECONDITION


def _target(q: ShapeQuery) -> str:
    return q.attrs.get("custom_call_target", "?")


def _operand_count(q: ShapeQuery, n: int) -> None:
    if len(q.operands) != n:
        q.fail(f"target {_target(q)!r} takes {n} operand(s), got {len(q.operands)}")


# -- identities and SPMD annotations ---------------------------------------------------------------
def _identity_shape(q: ShapeQuery) -> Shape:
    _operand_count(q, 1)
    return q.operands[0]


def _identity(ev, instr, x):
    return x


def _spmd_shape(shrinks: bool):
    def rule(q: ShapeQuery) -> Shape:
        _operand_count(q, 1)
        operand = q.array(0)
        result = q.need_declared_array()
        relation = "<=" if shrinks else ">="
        pairs = zip(result.dims, operand.dims, strict=False)
        ok = all((r <= o) if shrinks else (r >= o) for r, o in pairs)
        if result.dtype != operand.dtype or result.rank != operand.rank or not ok:
            q.fail(
                f"target {_target(q)!r} needs a result of the operand's type and rank with each "
                f"dimension {relation} the operand's; operand {operand}, result {result}"
            )
        return result

    return rule


def _spmd_evaluate(ev, instr, x):
    if x.shape != instr.shape.dims:
        raise Unimplemented(
            f"{instr.name}: {instr.attrs['custom_call_target']} from {x.dtype}{list(x.shape)} to "
            f"{instr.shape} needs a partitioned backend; the reference interpreter runs one "
            "partition, where shard and full shapes are equal"
        )
    return x


def _allocate_shape(q: ShapeQuery) -> Shape:
    _operand_count(q, 0)
    return q.need_declared()


def _zeros(shape: Shape):
    if isinstance(shape, TupleShape):
        return tuple(_zeros(e) for e in shape.elements)
    if isinstance(shape, ArrayShape):
        return np.zeros(shape.dims, shape.dtype.numpy)
    from hlort.shape import Token

    return Token()


def _allocate(ev, instr):
    return _zeros(instr.shape)


# -- JAX's GPU threefry kernel ---------------------------------------------------------------------
def _threefry_shape(q: ShapeQuery) -> Shape:
    _operand_count(q, 4)
    first = q.array(0)
    for i in range(4):
        shape = q.array(i)
        if shape.dtype != dtypes.U32 or shape.dims != first.dims:
            q.fail(
                f"target {_target(q)!r} takes (key0, key1, count0, count1) of one u32 shape; "
                f"operand 0 is {first}, operand {i} is {shape}"
            )
    return TupleShape((first, first))


def _threefry(ev, instr, key0, key1, count0, count1):
    from hlort.interpreter.prng import threefry2x32

    return threefry2x32(key0, key1, count0, count1)


# -- StableHLO test assertions ---------------------------------------------------------------------
def _pair_shape(result: Shape):
    def rule(q: ShapeQuery) -> Shape:
        _operand_count(q, 2)
        actual, expected = q.array(0), q.array(1)
        if actual != expected:
            q.fail(
                f"target {_target(q)!r} compares two values of one shape; got actual {actual} "
                f"and expected {expected}"
            )
        return result

    return rule


def _components(x: np.ndarray) -> list[np.ndarray]:
    if np.iscomplexobj(x):
        return [x.real, x.imag]
    return [x]


def _is_inexact(x: np.ndarray) -> bool:
    return dtypes.from_numpy(x.dtype).is_floating_or_complex


def _equal(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Exact equality per element; two NaNs count as equal."""
    if not _is_inexact(actual):
        return actual == expected
    ok = np.ones(actual.shape, bool)
    for a, e in zip(_components(actual), _components(expected), strict=True):
        a, e = a.astype(np.float64), e.astype(np.float64)
        ok &= (a == e) | (np.isnan(a) & np.isnan(e))
    return ok


def _almost_equal(actual: np.ndarray, expected: np.ndarray, tolerance: float) -> np.ndarray:
    """StableHLO's areApproximatelyEqual: same sign, finite, and within ``tolerance`` absolutely."""
    if not _is_inexact(actual):
        return actual == expected
    ok = np.ones(actual.shape, bool)
    for a, e in zip(_components(actual), _components(expected), strict=True):
        a, e = a.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            close = (
                np.isfinite(a) & np.isfinite(e) & (np.signbit(a) == np.signbit(e))
                & (np.abs(a - e) <= tolerance)
            )  # fmt: skip
        ok &= (a == e) | (np.isnan(a) & np.isnan(e)) | close
    return ok


def ulp_difference(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Units in the last place between floats (max over complex parts), as StableHLO counts them.

    Bitwise-equal values and two NaNs are 0 apart; a non-finite value is infinitely (2**64 - 1)
    far from anything else.
    """
    if np.iscomplexobj(actual):
        parts = zip(_components(actual), _components(expected), strict=True)
        return np.maximum.reduce([ulp_difference(a, e) for a, e in parts])
    bits = actual.dtype.itemsize * 8
    unsigned = np.dtype(f"uint{bits}")
    ba = actual.view(unsigned).astype(np.uint64)
    be = expected.view(unsigned).astype(np.uint64)
    sign = np.uint64(1 << (bits - 1))
    ma, me = ba & (sign - np.uint64(1)), be & (sign - np.uint64(1))
    distance = np.where(
        (ba & sign) != (be & sign), ma + me, np.where(ma > me, ma - me, me - ma)
    ).astype(np.uint64)
    fa, fe = actual.astype(np.float64), expected.astype(np.float64)
    far = np.uint64(np.iinfo(np.uint64).max)
    distance = np.where(np.isfinite(fa) & np.isfinite(fe), distance, far)
    distance = np.where(np.isnan(fa) & np.isnan(fe), np.uint64(0), distance)
    return np.where(ba == be, np.uint64(0), distance).astype(np.uint64)


def _report(instr, ok: np.ndarray, actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    if ok.all():
        return
    bad = np.argwhere(~ok)
    shown = []
    for index in bad[:5]:
        at = tuple(int(i) for i in index)
        shown.append(f"at {list(at)}: actual {actual[at].item()!r}, "
                     f"expected {expected[at].item()!r}")  # fmt: skip
    raise ExpectationFailed(
        f"{instr.name} ({instr.attrs['custom_call_target']}): {len(bad)} of {ok.size} element(s) "
        f"of {instr.operands[0].shape} differ {what}; " + "; ".join(shown)
    )


def _expect_eq(ev, instr, actual, expected):
    _report(instr, np.asarray(_equal(actual, expected)), actual, expected, "(exact comparison)")
    return ()


def _expect_almost_eq(ev, instr, actual, expected):
    ok = _almost_equal(actual, expected, ALMOST_EQ_TOLERANCE)
    _report(instr, np.asarray(ok), actual, expected, f"by more than {ALMOST_EQ_TOLERANCE}")
    return ()


def _expect_close(ev, instr, actual, expected):
    if _is_inexact(actual):
        ok = ulp_difference(actual, expected) <= np.uint64(CLOSE_MAX_ULP)
    else:
        ok = _equal(actual, expected)
    _report(instr, np.asarray(ok), actual, expected, f"by more than {CLOSE_MAX_ULP} ULP")
    return ()


def _check_eq(ev, instr, actual, expected):
    if _is_inexact(actual):
        ok = _almost_equal(actual, expected, 1e-4)
    else:
        ok = _equal(actual, expected)
    return np.array(bool(np.all(ok)))


def _register_all() -> None:
    for name in ("Sharding", "annotate_device_placement", "MoveToHost", "MoveToDevice"):
        register_custom_call(name, _identity_shape, _identity,
                             description="placement/sharding annotation: identity")  # fmt: skip
    register_custom_call("SPMDFullToShardShape", _spmd_shape(True), _spmd_evaluate,
                         description="full shape -> per-partition shape")  # fmt: skip
    register_custom_call("SPMDShardToFullShape", _spmd_shape(False), _spmd_evaluate,
                         description="per-partition shape -> full shape")  # fmt: skip
    register_custom_call("AllocateBuffer", _allocate_shape, _allocate,
                         description="an uninitialized buffer of the declared shape")  # fmt: skip
    for name in ("cu_threefry2x32", "cu_threefry2x32_ffi", "hip_threefry2x32",
                 "hip_threefry2x32_ffi"):  # fmt: skip
        register_custom_call(name, _threefry_shape, _threefry,
                             description="JAX's GPU Threefry-2x32 kernel")  # fmt: skip
    empty = TupleShape(())
    register_custom_call("check.expect_eq", _pair_shape(empty), _expect_eq,
                         description="assert actual == expected")  # fmt: skip
    register_custom_call("check.expect_almost_eq", _pair_shape(empty), _expect_almost_eq,
                         description=f"assert |actual - expected| <= {ALMOST_EQ_TOLERANCE}")
    register_custom_call("check.expect_close", _pair_shape(empty), _expect_close,
                         description=f"assert within {CLOSE_MAX_ULP} ULP")  # fmt: skip
    register_custom_call("check.eq", _pair_shape(scalar(dtypes.PRED)), _check_eq,
                         description="pred[]: whether actual == expected")  # fmt: skip


_register_all()
