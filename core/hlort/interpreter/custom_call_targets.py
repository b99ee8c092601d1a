"""Custom-call targets hlort ships, registered in :mod:`hlort.ir.custom_calls` when
:mod:`hlort.interpreter` is imported.

Each is a target real programs contain:

- ``Sharding``, ``SPMDFullToShardShape``, ``SPMDShardToFullShape``: XLA's SPMD partitioner
  annotations (what ``jax.jit`` with shardings and ``shard_map`` emit). On one partition they are
  identities; a shard shape that differs from the full shape needs a partitioned backend.
- ``annotate_device_placement`` (JAX memory kinds), ``MoveToHost`` / ``MoveToDevice`` (XLA host
  offloading): placement hints, identities on values.
- ``AllocateBuffer``: XLA's uninitialized buffer of the declared shape (zeros here).
- ``dce_sink``: what ``jax.lax.dce_sink(x, prevent_mlir_dce=True)`` lowers to, a side-effecting
  call with no results that keeps ``x``'s computation alive; it does nothing when it runs.
- ``cu_threefry2x32`` / ``hip_threefry2x32`` (and ``_ffi`` spellings): JAX's GPU Threefry kernel,
  operands (key0, key1, count0, count1) of one u32 shape, result the two output words.
- ``lapack_<s|d|c|z><routine>_ffi`` (potrf, getrf, geqrf, orgqr/ungqr, syevd/heevd, gesdd,
  gesvd, trsm, geev, gees, gehrd, sytrd/hetrd, gtsv) and ``Eigh``: what ``jnp.linalg`` and
  ``jax.scipy.linalg`` lower to on CPU (and eigh on TPU); see
  :mod:`hlort.interpreter.lapack_targets`.
- ``TopK``: XLA:CPU's ``jax.lax.top_k`` (:mod:`hlort.interpreter.topk_target`).

The StableHLO test-suite ``check.*`` targets are the testdata runner's
(:mod:`hlort.testdata.check_targets`).
"""

from __future__ import annotations

import numpy as np

from hlort import dtypes
from hlort.errors import Unimplemented
from hlort.interpreter.lapack_targets import register_lapack_targets
from hlort.interpreter.topk_target import register_topk_target
from hlort.ir.custom_calls import register_custom_call, require_operand_count, target_name
from hlort.ir.shape_inference import ShapeQuery
from hlort.shape import ArrayShape, Shape, TupleShape


# -- identities and SPMD annotations ---------------------------------------------------------------
def _identity_shape(q: ShapeQuery) -> Shape:
    require_operand_count(q, 1)
    return q.operands[0]


def _identity(ev, instr, x):
    return x


def _spmd_shape(shrinks: bool):
    def rule(q: ShapeQuery) -> Shape:
        require_operand_count(q, 1)
        operand = q.array(0)
        result = q.need_declared_array()
        relation = "<=" if shrinks else ">="
        pairs = zip(result.dims, operand.dims, strict=False)
        ok = all((r <= o) if shrinks else (r >= o) for r, o in pairs)
        if result.dtype != operand.dtype or result.rank != operand.rank or not ok:
            q.fail(
                f"target {target_name(q)!r} needs a result of the operand's type and rank with "
                f"each dimension {relation} the operand's; operand {operand}, result {result}"
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
    require_operand_count(q, 0)
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


def _dce_sink_shape(q: ShapeQuery) -> Shape:
    if q.declared is not None and q.declared != TupleShape(()):
        q.fail(f"target 'dce_sink' has no results, but {q.declared} was declared")
    return TupleShape(())


def _dce_sink(ev, instr, *operands):
    return ()


# -- JAX's GPU threefry kernel ---------------------------------------------------------------------
def _threefry_shape(q: ShapeQuery) -> Shape:
    require_operand_count(q, 4)
    first = q.array(0)
    for i in range(4):
        shape = q.array(i)
        if shape.dtype != dtypes.U32 or shape.dims != first.dims:
            q.fail(
                f"target {target_name(q)!r} takes (key0, key1, count0, count1) of one u32 shape; "
                f"operand 0 is {first}, operand {i} is {shape}"
            )
    return TupleShape((first, first))


def _threefry(ev, instr, key0, key1, count0, count1):
    from hlort.interpreter.prng import threefry2x32

    return threefry2x32(key0, key1, count0, count1)


def _register_all() -> None:
    for name in ("Sharding", "annotate_device_placement", "MoveToHost", "MoveToDevice"):
        register_custom_call(
            name, _identity_shape, _identity, description="placement/sharding annotation: identity"
        )
    register_custom_call(
        "SPMDFullToShardShape",
        _spmd_shape(True),
        _spmd_evaluate,
        description="full shape -> per-partition shape",
    )
    register_custom_call(
        "SPMDShardToFullShape",
        _spmd_shape(False),
        _spmd_evaluate,
        description="per-partition shape -> full shape",
    )
    register_custom_call(
        "AllocateBuffer",
        _allocate_shape,
        _allocate,
        description="an uninitialized buffer of the declared shape",
    )
    register_custom_call(
        "dce_sink",
        _dce_sink_shape,
        _dce_sink,
        description="JAX's dce_sink: keeps its operands' computation alive, no results",
    )
    for name in (
        "cu_threefry2x32",
        "cu_threefry2x32_ffi",
        "hip_threefry2x32",
        "hip_threefry2x32_ffi",
    ):
        register_custom_call(
            name, _threefry_shape, _threefry, description="JAX's GPU Threefry-2x32 kernel"
        )
    register_lapack_targets()
    register_topk_target()


_register_all()
