"""A row fusion's stash: values a reduce's loop computes that later loops of the row read again.

Softmax folds ``exp(x - max)`` into its sum and then divides the same ``exp(x - max)`` for the
output; attention's scores (scaled, masked) feed the max and then the exp. Computed again in
every loop that reads them, their arithmetic (an exp is some 25 vector instructions per 16
elements) costs more than the row's memory traffic. So when a reduce folds an elementwise value
that has users besides the reduce, its loop also stores the value in a row of stack scratch
(one row: it stays in L1), and the loops after it load element ``j`` there instead of emitting
the computation again. The value stored is the one the reduce folded, so nothing rounds
differently. Rows longer than the scratch limit are computed again, as before.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.fused_emitter import FusedEmitter
from hlort.codegen.llvm.index import Index, i64
from hlort.codegen.llvm.llvm_types import value_type
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort_cpu.codegen import code_settings

STASH_MAX_BYTES = 32 << 10  # all of a row's stashes together: within L1 (32-64 KiB per core)
code_settings.declare(__name__, "STASH_MAX_BYTES")


class RowStash:
    """The stack rows of one row kernel; allocate before the loops (entry block)."""

    def __init__(
        self, b: ir.IRBuilder, comp: Computation, reduces: list[Instruction], row_size: int
    ):
        self.b = b
        users = comp.users()
        self.slots: dict[Instruction, tuple[ir.Type, ir.Value]] = {}
        self.kept_by: dict[Instruction, list[Instruction]] = {}
        total = 0
        for r in reduces:
            for x in r.operands[: len(r.operands) // 2]:
                if x in self.slots or not x.is_elementwise:
                    continue  # a load of a parameter is as cheap as a load of the stash
                if all(u is r for u in users.get(x, [])):
                    continue  # nothing after the reduce reads it
                size = row_size * max(x.shape.dtype.itemsize, 4)  # >= its register's bytes
                if row_size < 2 or total + size > STASH_MAX_BYTES:
                    continue
                t = value_type(x.shape.dtype)
                total += size
                row = b.alloca(t, size=i64(row_size))
                row.align = 64
                self.slots[x] = (t, row)
                self.kept_by.setdefault(r, []).append(x)
        self.ready: set[Instruction] = set()
        self.j: ir.Value | None = None

    def start_row(self) -> None:
        self.ready.clear()

    def _at(self, x: Instruction, j: ir.Value) -> ir.Value:
        t, row = self.slots[x]
        return self.b.gep(row, [j], inbounds=True, source_etype=t)

    def enter(self, em: FusedEmitter, index: Index, j: ir.Value) -> None:
        """Element ``j`` of a row loop at ``index``: stashed values answer from the stash."""
        self.j = j
        for x in self.ready:
            t, _ = self.slots[x]
            em.provide(x, index, self.b.load(self._at(x, j), typ=t))

    def keep(self, r: Instruction, values: list[ir.Value]) -> None:
        """Store what reduce ``r`` folds at the current element, for the loops after it."""
        for x, v in zip(r.operands, values, strict=False):
            if x in self.kept_by.get(r, ()) and x not in self.ready:
                self.b.store(v, self._at(x, self.j))

    def finish(self, r: Instruction) -> None:
        """``r``'s loop is closed: later loops may load its stashed values."""
        self.ready.update(self.kept_by.get(r, ()))
