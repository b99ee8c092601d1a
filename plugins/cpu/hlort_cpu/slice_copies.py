"""Small standalone slices of the entry run as NumPy copies, not LLVM kernels.

A slice that fusion left on its own (a dot's operand: causal attention's row blocks slice q, k
and v ten times) is only a copy. Compiled as a kernel it costs LLVM about 8 ms of optimize +
emit CPU time on the benchmark host whatever its size (a two-instruction function; measured
with each kernel of the model workloads compiled alone), while NumPy copies a 256 KiB slice in
tens of microseconds. A slice the thread pool would not split (fewer than
``thread_pool.PARALLEL_MIN_ELEMENTS`` elements, and at most ``COPY_MAX_BYTES``) runs in NumPy;
a larger one stays a kernel, which the pool splits across cores: causal attention's ten
slices of 1 MiB as NumPy copies cost 7-10% of its run time on two cores (2.47-2.68 ->
2.74-2.86 ms a call, alternating processes, quiet 2-vCPU host), more than the compile time
they saved (~70 ms once). Not reshapes: the CNN workload's one (its
pooled activations flattened for the dense layer) ran slower as a copy (0.66 -> 0.71 ms a call,
one thread). Only the entry's: a loop body stays all kernels, so a native while driver
(native_while.py) can still take it; and none that a tuple or control flow reads, so a loop's
initial state that a kernel made stays one the loop may take as its own.

The copy writes into the output the program gives it (an arena view, as a kernel does) or a
fresh array, and never returns a view of its input, so compiler.py gives it the arena's
"kernel" kind. Values are copied bit for bit, every dtype alike.
"""

from __future__ import annotations

import numpy as np

from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort_cpu import thread_pool
from hlort_cpu.host_pool import host_pool

COPY_MAX_BYTES = 1 << 20  # of the result; larger slices stay (multi-threaded) kernels
# readers whose operands stay kernels: a tuple (a native loop takes as its state only a
# kernel's result, native_while._owned_init_leaves) and control flow
_KEEP_READERS = frozenset({Opcode.TUPLE, Opcode.WHILE, Opcode.CONDITIONAL, Opcode.CALL})


def slice_copies(order: list[Instruction]) -> set[Instruction]:
    """The slices of ``order`` (the entry's) that run as NumPy copies."""
    kept = {o for i in order if i.opcode in _KEEP_READERS for o in i.operands}
    return {i for i in order if i not in kept and is_small_slice(i)}


def is_small_slice(instr: Instruction) -> bool:
    """Whether ``instr`` is a slice of an array into at most ``COPY_MAX_BYTES`` that a kernel
    would run on one thread."""
    if instr.opcode is not Opcode.SLICE or not instr.shape.is_array:
        return False
    if len(instr.operands) != 1 or not instr.operands[0].shape.is_array:
        return False
    if instr.shape.size >= thread_pool.PARALLEL_MIN_ELEMENTS:  # a kernel the pool splits
        return False
    return instr.shape.size * np.dtype(instr.shape.dtype.numpy).itemsize <= COPY_MAX_BYTES


class SliceCopyThunk:
    """out = a C-ordered copy of the operand's slice."""

    label = "slice (copy)"

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        self.src, self.out = ins[0], out
        self.dims = tuple(instr.shape.dims)
        self.index = tuple(slice(s.start, s.limit, s.stride) for s in instr.attrs["slice"])
        self.dtype = np.dtype(instr.shape.dtype.numpy)
        self.pool = host_pool()  # as a kernel's fresh output: large ones pooled (warm pages)

    def __call__(self, env) -> None:
        given = env[self.out]  # an arena view, or None
        out = self.pool.empty(self.dims, self.dtype) if given is None else given
        np.copyto(out, env[self.src][self.index])
        env[self.out] = out
