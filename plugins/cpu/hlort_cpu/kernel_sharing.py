"""Kernels that serve several instructions: each compiled kernel costs LLVM ~8 ms, however small.

Two kernel computations with equal digests (``computation_fingerprint``: the same structure,
names aside) compute the same thing, so only the first is compiled and the others run its
function: causal attention's row-block slices of the same size from q, k and v, the MLP step's
bias-gradient reductions of equal shape. A slice of the entry starting away from the origin is
compiled as the same slice from the origin, its start given as a byte offset the kernel thunk
adds to the input's address (the addresses read are the original slice's): slices of one
operand that differ only in where they start then share one kernel too (attention's ten
row-block slices: three kernels, 18 -> 10 in all). The offset is only for the entry's own
thunks: a native while driver (native_while.py) calls its body's kernels with tables of its
own, which carry no offsets.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np

from hlort.ir.attributes import SliceDim
from hlort.ir.computation import Computation
from hlort.ir.fingerprint import computation_fingerprint
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode


def share_kernels(
    to_compile: list[tuple[Instruction, Computation]],
    entry: set[Instruction],
    wrap: Callable[[Instruction], Computation],
) -> tuple[list[tuple[Instruction, Computation]], list[int], dict[Instruction, int]]:
    """(the candidates with slices of ``entry`` moved to the origin, for each candidate the
    index of the one whose kernel it runs, the input byte offset of each moved slice).
    ``wrap``: an instruction as a one-op computation (compiler.wrap_instruction). Only
    candidates alike in :func:`_rough_key` with another are moved and fingerprinted (a cache
    hit redoes this: attention's 18 candidates cost 1.7 ms fingerprinted all)."""
    rough = [_rough_key(instr, comp) for instr, comp in to_compile]
    alike = Counter(rough)
    out: list[tuple[Instruction, Computation]] = []
    first: dict[str, int] = {}
    owners: list[int] = []
    offsets: dict[Instruction, int] = {}
    for k, (instr, comp) in enumerate(to_compile):
        if alike[rough[k]] == 1:
            out.append((instr, comp))
            owners.append(k)
            continue
        if instr in entry:
            moved = origin_slice(instr)
            if moved is not None:
                origin, offset = moved
                comp = wrap(origin)
                if offset:
                    offsets[instr] = offset
        out.append((instr, comp))
        owners.append(first.setdefault(computation_fingerprint(comp), k))
    return out, owners, offsets


def _rough_key(instr: Instruction, comp: Computation) -> tuple:
    """What the computations of equal kernels surely share, a slice's start aside (no walk)."""
    shapes = tuple(p.shape for p in comp.parameters)
    return (instr.opcode, shapes, comp.root.shape, len(comp.instructions))


def origin_slice(instr: Instruction) -> tuple[Instruction, int] | None:
    """(``instr`` as a slice from the origin (a detached copy), the byte offset of its
    start in the row-major operand), or None when ``instr`` is no such slice: a dtype NumPy
    keeps in whole bytes of its own (not an ml_dtypes one) and a row-major operand."""
    if instr.opcode is not Opcode.SLICE:
        return None
    shape = instr.operands[0].shape
    if not shape.is_array or np.dtype(shape.dtype.numpy).kind not in "fiubc":
        return None
    rank = len(shape.dims)
    if shape.layout is not None and tuple(shape.layout) != tuple(range(rank - 1, -1, -1)):
        return None
    dims = list(instr.attrs["slice"])
    start = sum(d.start * math.prod(shape.dims[k + 1 :]) for k, d in enumerate(dims))
    sizes = instr.shape.dims  # each limit the least that gives the size: [1:9:2] as [0:7:2]
    origin = tuple(
        SliceDim(0, (n - 1) * d.stride + 1 if n else 0, d.stride)
        for d, n in zip(dims, sizes, strict=True)
    )
    return instr.clone_with(
        attrs={**instr.attrs, "slice": origin}
    ), start * shape.dtype.numpy.itemsize
