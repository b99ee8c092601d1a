"""Which custom calls the GPU computes itself, and as what.

A custom call means what its registered target says (hlort.ir.custom_calls). Of the targets
hlort ships (hlort.interpreter.custom_call_targets), two kinds have device steps:

- the placement and sharding annotations (``Sharding``, ``annotate_device_placement``,
  ``MoveToHost``, ``MoveToDevice``, and ``SPMDFullToShardShape`` / ``SPMDShardToFullShape``
  between equal shapes, as on one partition): identities, so a device copy per array leaf;
- ``TopK`` (XLA:CPU's ``jax.lax.top_k``): the k largest along the last dimension, descending
  in XLA's total order, ties in index order: exactly the ``topk`` instruction with
  ``largest=true``, so the GPU top-k kernel;
- ``AllocateBuffer`` of an array: zeros, as the interpreter gives (XLA leaves it
  uninitialized), so a loop kernel broadcasting a zero;
- JAX's threefry kernel (``cu_threefry2x32``, ``hip_threefry2x32``, ``_ffi`` spellings): the
  elementwise threefry kernel (rng_schedule.py);
- ``lapack_?potrf_ffi``: the Cholesky kernel with LAPACK's outputs (``CholeskyPlan.lapack``:
  ``info``, the other triangle kept), ``uplo`` choosing the triangle;
- ``lapack_?trsm_ffi``: exactly a ``triangular-solve`` (``side`` L: ``left_side``; ``uplo``;
  ``trans_x`` N/T/C: ``transpose_a``; ``diag`` U: ``unit_diagonal``; alpha is 1, JAX passes
  none), so the substitution kernel, when ``a``'s batch dimensions are ``b``'s (the older
  3-operand form, with alpha, stays a host step).

A name re-registered with ``replace=True`` is the user's function and is not recognized (its
evaluate function is no longer the shipped one). Everything else stays a counted host
fallback: the other LAPACK calls (getrf, geqrf, orgqr/ungqr, syevd/heevd, gesdd/gesvd) and
``Eigh``, ``AllocateBuffer`` of a tuple, an SPMD reshape between different shapes (which needs
a partitioned backend), users' targets.
"""

from __future__ import annotations

import math

import numpy as np

from hlort import dtypes
from hlort.codegen.gpu.cholesky_schedule import CholeskyPlan
from hlort.errors import HlortError
from hlort.ir.attributes import Transpose
from hlort.ir.computation import Computation
from hlort.ir.custom_calls import evaluator_for
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape


def custom_call_kind(instr: Instruction) -> str:
    """ "identity", "topk", "zeros", "threefry", "potrf", "trsm", or "" (a host fallback) for
    custom call ``instr``."""
    from hlort.interpreter import custom_call_targets as shipped
    from hlort.interpreter import lapack_targets, topk_target

    try:
        evaluate = evaluator_for(instr.attrs.get("custom_call_target", ""))
    except HlortError:
        return ""
    if evaluate is shipped._identity:
        return "identity"
    if evaluate is shipped._spmd_evaluate:
        operand = instr.operands[0].shape
        same = operand.is_array and instr.shape.is_array and operand.dims == instr.shape.dims
        return "identity" if same else ""
    if evaluate is topk_target._evaluate:
        return "topk"
    if evaluate is shipped._allocate and instr.shape.is_array:
        return "zeros"
    if evaluate is shipped._threefry:
        return "threefry"
    if evaluate is lapack_targets._evaluate:
        call = _lapack(instr)
        return call.routine if call is not None and call.routine in ("potrf", "trsm") else ""
    return ""


def host_call_reason(instr: Instruction) -> str:
    """Why custom call ``instr`` (of no kind above) is a host step, naming its target."""
    target = instr.attrs.get("custom_call_target", "")
    call = _lapack(instr)
    if call is not None or target == "Eigh":
        routine = call.routine if call is not None else "syevd"
        return f"{target}: LAPACK {routine} has no GPU kernel (no cuSOLVER / rocSOLVER mapping)"
    return f"custom call target {target!r} has no GPU kernel; it runs on the host"


def _lapack(instr: Instruction):
    from hlort.interpreter.lapack_targets import lapack_call

    try:
        return lapack_call(instr)
    except HlortError:  # a malformed backend_config: the host step reports it when it runs
        return None


def potrf_plan(instr: Instruction) -> tuple[CholeskyPlan | None, str]:
    """The Cholesky kernel's plan for a ``lapack_?potrf_ffi`` call, or None and why not."""
    call = _lapack(instr)
    a = instr.operands[0].shape
    factor, info = instr.shape.elements
    if a.dims[-1] != a.dims[-2] or factor.dtype != a.dtype:
        return None, f"potrf of {a} -> {factor}: not square matrices of one type"
    if info.dtype != dtypes.S32 or info.dims != a.dims[:-2]:
        return None, f"potrf's info is {info}, not s32 of the batch shape {list(a.dims[:-2])}"
    lower = call.char("uplo", "L") == "L"
    return CholeskyPlan(math.prod(a.dims[:-2]), a.dims[-1], lower, a.dtype, lapack=True), ""


_TRANSPOSES = {"N": Transpose.NO_TRANSPOSE, "T": Transpose.TRANSPOSE, "C": Transpose.ADJOINT}


def as_triangular_solve(instr: Instruction) -> tuple[Instruction | None, str]:
    """The ``triangular-solve`` (detached, on the same operands) a ``lapack_?trsm_ffi`` call
    computes, or None and why not."""
    call = _lapack(instr)
    if len(instr.operands) != 2:  # JAX's older form passes alpha: the substitution has none
        return None, "trsm with an alpha operand (op(a) x = alpha b) has no GPU kernel"
    a, rhs = (o.shape for o in instr.operands)
    left = call.char("side", "L") == "L"
    n = rhs.dims[-2] if left else rhs.dims[-1]
    how = _TRANSPOSES.get(call.char("trans_x", "N"))
    if a.dims != (*rhs.dims[:-2], n, n) or how is None or instr.shape != rhs:
        return None, f"trsm of {a} and {rhs} (trans_x {call.char('trans_x', 'N')!r}) is no solve"
    attrs = {
        "left_side": left,
        "lower": call.char("uplo", "L") == "L",
        "unit_diagonal": call.char("diag", "N") == "U",
        "transpose_a": how,
    }
    operands = list(instr.operands)
    return Instruction(Opcode.TRIANGULAR_SOLVE, instr.shape, operands, attrs, instr.name), ""


def as_topk(instr: Instruction) -> Instruction:
    """The ``topk`` instruction (detached, on the same operand) a ``TopK`` call computes."""
    k = instr.shape.elements[0].dims[-1]
    return Instruction(
        Opcode.TOPK, instr.shape, list(instr.operands), {"k": k, "largest": True}, instr.name
    )


def zeros_computation(instr: Instruction) -> Computation:
    """A computation of no parameters whose result is zeros of ``instr``'s array shape."""
    shape = instr.shape
    comp = Computation(f"zeros_{instr.name}")
    zero = comp.add_instruction(
        Instruction(
            Opcode.CONSTANT,
            ArrayShape(shape.dtype, ()),
            (),
            literal=np.zeros((), shape.dtype.numpy),
        )
    )
    comp.set_root(
        comp.add_instruction(Instruction(Opcode.BROADCAST, shape, [zero], {"dimensions": ()}))
    )
    return comp


__all__ = [
    "as_topk",
    "as_triangular_solve",
    "custom_call_kind",
    "host_call_reason",
    "potrf_plan",
    "zeros_computation",
]
