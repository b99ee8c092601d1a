"""Which computations are a transpose of the contiguous dimension, and their merged form.

``plan_transpose`` recognizes exactly ``transpose(parameter)`` whose output's last dimension is
not the input's last one (every output row reads a column) and merges the dimensions the
permutation keeps together, so any rank reduces to ``[outer..., rows, cols] -> [outer'...,
cols, rows]``. The plan is target-neutral: the CPU moves tiles through vector registers
(hlort_cpu.codegen.transpose_kernel), a GPU through shared memory.
"""

from __future__ import annotations

import math

from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.lazy_dataclass import dataclass


@dataclass(frozen=True)
class TransposePlan:
    in_dims: tuple[int, ...]  # after merging
    perm: tuple[int, ...]  # output dim k reads merged input dim perm[k]
    itemsize: int

    @property
    def out_dims(self) -> tuple[int, ...]:
        return tuple(self.in_dims[p] for p in self.perm)


def plan_transpose(comp: Computation) -> TransposePlan | None:
    """The plan when ``comp`` is exactly ``transpose(parameter)`` moving the last dimension."""
    root = comp.root
    if root.opcode is not Opcode.TRANSPOSE or root.operands[0].opcode is not Opcode.PARAMETER:
        return None
    if len(comp.parameters) != 1 or not root.shape.is_array:
        return None
    itemsize = root.shape.dtype.numpy.itemsize
    if itemsize not in (1, 2, 4, 8) or root.shape.size == 0:
        return None
    in_dims, perm = _merge(root.operands[0].shape.dims, tuple(root.attrs["dimensions"]))
    if len(perm) < 2 or perm[-1] == len(perm) - 1:
        return None  # the contiguous dimension stays last: the plain loop copies rows
    return TransposePlan(in_dims, perm, itemsize)


def _merge(dims: tuple[int, ...], perm: tuple[int, ...]) -> tuple[tuple[int, ...], tuple]:
    """Drop size-1 dims and merge input dims that stay adjacent and in order in the output."""
    keep = [d for d in perm if dims[d] != 1]
    groups: list[list[int]] = []
    for d in keep:
        if groups and groups[-1][-1] + 1 == d:
            groups[-1].append(d)
        else:
            groups.append([d])
    order = sorted(range(len(groups)), key=lambda g: groups[g][0])
    merged_in = tuple(math.prod(dims[d] for d in groups[g]) for g in order)
    rank = {g: k for k, g in enumerate(order)}
    return merged_in, tuple(rank[g] for g in range(len(groups)))
