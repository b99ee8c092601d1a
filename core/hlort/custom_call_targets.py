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
  StableHLO test-suite assertions used throughout its testdata corpus, compared as the testdata
  runner compares (:mod:`hlort.testdata.comparisons`); a failed expectation raises
  :class:`ExpectationFailed`.
- ``lapack_<s|d|c|z><routine>_ffi`` (potrf, getrf, geqrf, orgqr/ungqr, syevd/heevd, gesdd,
  gesvd, trsm) and ``Eigh``: what ``jnp.linalg`` lowers to on CPU (and eigh on TPU); see
  :mod:`hlort.lapack_targets`.
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.custom_calls import register_custom_call
from hlort.errors import ErrorCode, HlortError, Unimplemented
from hlort.ir.shape_inference import ShapeQuery
from hlort.lapack_targets import register_lapack_targets
from hlort.shape import ArrayShape, Shape, TupleShape, scalar
from hlort.testdata.comparisons import elements_match

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
    ok = elements_match("eq", actual, expected)
    _report(instr, np.asarray(ok), actual, expected, "(exact comparison)")
    return ()


def _expect_almost_eq(ev, instr, actual, expected):
    ok = elements_match("almost_eq", actual, expected, tolerance=ALMOST_EQ_TOLERANCE)
    _report(instr, np.asarray(ok), actual, expected, f"by more than {ALMOST_EQ_TOLERANCE}")
    return ()


def _expect_close(ev, instr, actual, expected):
    ok = elements_match("close", actual, expected, max_ulp=CLOSE_MAX_ULP)
    _report(instr, np.asarray(ok), actual, expected, f"by more than {CLOSE_MAX_ULP} ULP")
    return ()


def _check_eq(ev, instr, actual, expected):
    ok = elements_match("almost_eq", actual, expected, tolerance=1e-4)
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
    register_lapack_targets()


_register_all()
