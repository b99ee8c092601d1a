"""Custom-call thunks: the targets hlort ships run natively; other targets run their definition.

A custom call means whatever its registered target says (``hlort.ir.custom_calls``). For the targets
``hlort.interpreter.custom_call_targets`` ships, the cpu plugin has native thunks:

- placement and sharding annotations (``Sharding``, ``annotate_device_placement``,
  ``MoveToHost``, ``MoveToDevice``, and ``SPMDFullToShardShape`` / ``SPMDShardToFullShape``
  when shard and full shape are equal, as on one partition): the result is the operand's value
  itself, no copy ("custom-call (alias)"). An SPMD reshape between different shapes needs a
  partitioned backend: it stays the counted FALLBACK, whose interpreter function raises
  UNIMPLEMENTED when it runs, as the interpreter does;
- ``AllocateBuffer``: a pooled buffer of the declared shape, zero-filled like the interpreter's
  ("custom-call (AllocateBuffer)");
- JAX's threefry kernels (``cu_threefry2x32``, ``hip_threefry2x32`` and ``_ffi`` spellings): the
  rng kernel's Threefry-2x32 rounds as an elementwise library kernel, threads splitting the
  elements ("custom-call (threefry kernel)");
- JAX's LAPACK calls (``lapack_sgetrf_ffi``... and TPU's ``Eigh``): LAPACK itself through SciPy
  ("custom-call (LAPACK)", :mod:`hlort_cpu.lapack`).

A shipped target is recognized by its registered ``evaluate_fn`` being the one hlort ships, so a
name re-registered with ``replace=True`` runs the user's function, as the interpreter would.

Every other target (a user's ``register_custom_call``, and the StableHLO test assertions
``check.*`` hlort ships) is *defined* by its Python ``evaluate_fn``: there is no kernel to compile
and nothing to fall back from, so running that function on the host is the native execution,
as XLA's CPU backend calls a registered host function. It runs through the interpreter's
custom-call dispatch (the same lookup, and errors naming the call site) and is counted under
``compiled`` as "custom-call (host callback)", not as a FALLBACK: ``fallback_count`` keeps
meaning "ops the plugin could compile but does not yet". Unregistered targets, and targets
without an ``evaluate_fn``, fail the compile with UNIMPLEMENTED naming the target.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from hlort.interpreter.lapack_targets import lapack_call
from hlort.interpreter.registry import function_for
from hlort.ir.custom_calls import evaluator_for
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape, Shape, Token, TupleShape
from hlort_cpu.host_pool import host_pool
from hlort_cpu.lapack import LapackThunk
from hlort_cpu.library_kernels import library_kernel
from hlort_cpu.thread_pool import chunks, run_chunks
from hlort_cpu.thunks import address

_THREEFRY_POINTERS = ctypes.c_void_p * 6
_THREEFRY_OPS_PER_ELEMENT = 32  # ~100 integer ops: threads pay off from a few thousand elements


class AliasThunk:
    """An identity annotation: the result is the operand's value (no copy)."""

    label = "custom-call (alias)"

    def __init__(self, ins: list[int], out: int):
        self.src, self.out = ins[0], out

    def __call__(self, env) -> None:
        env[self.out] = env[self.src]


class AllocateThunk:
    """``AllocateBuffer``: pooled, zero-filled arrays of the declared shape (tuples and tokens
    as the shape says)."""

    label = "custom-call (AllocateBuffer)"

    def __init__(self, shape: Shape, out: int):
        self.shape, self.out = shape, out

    def _make(self, shape: Shape):
        if isinstance(shape, TupleShape):
            return tuple(self._make(s) for s in shape.elements)
        if isinstance(shape, ArrayShape):
            array = host_pool().empty(shape.dims, np.dtype(shape.dtype.numpy))
            array[...] = 0
            return array
        return Token()

    def __call__(self, env) -> None:
        env[self.out] = self._make(self.shape)


class ThreefryThunk:
    """JAX's threefry custom call: (key0, key1, count0, count1) -> (bits0, bits1), u32."""

    label = "custom-call (threefry kernel)"

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        self.dims = instr.operands[0].shape.dims
        size = math.prod(self.dims)
        self.kernel = library_kernel("threefry2x32")
        self.ranges = chunks(size, _THREEFRY_OPS_PER_ELEMENT) if size else []
        self.ins, self.out = ins, out

    def __call__(self, env) -> None:
        words = [np.ascontiguousarray(env[i], np.uint32) for i in self.ins]
        pool = host_pool()
        outs = (
            pool.empty(self.dims, np.dtype(np.uint32)),
            pool.empty(self.dims, np.dtype(np.uint32)),
        )
        if self.ranges:
            pointers = _THREEFRY_POINTERS(*[address(a) for a in (*words, *outs)])
            run_chunks(self.kernel, pointers, self.ranges)
        env[self.out] = outs


class HostCallbackThunk:
    """A target defined by its Python ``evaluate_fn``, run on the host (see the module
    docstring for why this is not a FALLBACK)."""

    label = "custom-call (host callback)"

    def __init__(self, evaluator, instr: Instruction, ins: list[int], out: int):
        self.evaluator, self.instr, self.ins, self.out = evaluator, instr, ins, out
        self.dispatch = function_for(Opcode.CUSTOM_CALL)

    def __call__(self, env) -> None:
        env[self.out] = self.dispatch(self.evaluator, self.instr, *[env[i] for i in self.ins])


def _shipped_kind(evaluate_fn) -> str | None:
    """Which shipped target ``evaluate_fn`` implements, or None (a user's, or a ``check.*``)."""
    from hlort.interpreter import custom_call_targets as shipped
    from hlort.interpreter import lapack_targets

    kinds = {
        "_identity": "alias",
        "_spmd_evaluate": "spmd",
        "_allocate": "allocate",
        "_threefry": "threefry",
    }
    for name, kind in kinds.items():
        if getattr(shipped, name, None) is evaluate_fn:
            return kind
    if evaluate_fn is lapack_targets._evaluate:
        return "lapack"
    if evaluate_fn is lapack_targets._evaluate_eigh_tpu:
        return "eigh_tpu"
    return None


def custom_call_thunk(instr: Instruction, ins: list[int], out: int, evaluator):
    """The thunk for a custom call, or None for an SPMD reshape between different shapes (the
    counted fallback). UNIMPLEMENTED when the target is unknown or cannot be evaluated."""
    evaluate_fn = evaluator_for(instr.attrs.get("custom_call_target", ""))
    kind = _shipped_kind(evaluate_fn)
    if kind == "lapack":
        return LapackThunk(instr, lapack_call(instr), ins, out)
    if kind == "eigh_tpu":
        return LapackThunk(instr, None, ins, out)
    if kind == "spmd":
        operand = instr.operands[0].shape
        same = isinstance(operand, ArrayShape) and operand.dims == instr.shape.dims
        return AliasThunk(ins, out) if same else None
    if kind == "alias":
        return AliasThunk(ins, out)
    if kind == "allocate":
        return AllocateThunk(instr.shape, out)
    if kind == "threefry":
        return ThreefryThunk(instr, ins, out)
    return HostCallbackThunk(evaluator, instr, ins, out)
