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
  uninitialized), so a loop kernel broadcasting a zero.

A name re-registered with ``replace=True`` is the user's function and is not recognized (its
evaluate function is no longer the shipped one). Everything else stays a counted host
fallback: LAPACK calls, JAX's threefry kernel, ``AllocateBuffer`` of a tuple, an SPMD reshape
between different shapes (which needs a partitioned backend), users' targets.
"""

from __future__ import annotations

import numpy as np

from hlort.errors import HlortError
from hlort.ir.computation import Computation
from hlort.ir.custom_calls import evaluator_for
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape


def custom_call_kind(instr: Instruction) -> str:
    """ "identity", "topk", or "" (a host fallback) for custom call ``instr``."""
    from hlort.interpreter import custom_call_targets as shipped
    from hlort.interpreter import topk_target

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
    return ""


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


__all__ = ["as_topk", "custom_call_kind", "zeros_computation"]
