"""What every lowering module shares: the value references and the per-computation context.

Kept apart from :mod:`.lowering` (the driver that dispatches to the op modules) so that the op
modules import these downward and the driver imports the op modules, without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction

TOKEN = "token"
Ref = Any  # int (buffer id) | tuple[Ref, ...] | TOKEN


@dataclass
class Context:
    """A computation being lowered, with the buffers its parameters are bound to."""

    comp: Computation
    params: list[Ref]
    fused: bool
    memo: dict[Instruction, Ref] = field(default_factory=dict)


def flatten(ref: Ref) -> list[int]:
    if isinstance(ref, tuple):
        out: list[int] = []
        for r in ref:
            out += flatten(r)
        return out
    if ref == TOKEN:
        return []
    return [ref]
