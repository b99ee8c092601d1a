"""Streaming stores for a row fusion's big element outputs: a row in L1, then whole lines out.

A plain store to a line that is not in the cache reads the line first (read for ownership), so
a memory-bound kernel that writes a big output can move three bytes over the memory bus for
every two the copy bandwidth counts (layernorm [4096,1024] was at 68% of the copy floor).
Non-temporal stores of whole, aligned lines skip that
read (and do not evict the input from the caches). The output loop cannot make them itself:
the vectorizer widens its stores only at their scalar alignment. So the output loop writes the
row into stack scratch (64-byte aligned, it stays in L1), and a loop of 64-byte vector moves
copies it to the output, non-temporally when the output is 64-byte aligned (the host pool's
arrays are; others are copied with plain stores). Bytes move as integers: values, NaN payloads
and -0.0 arrive bit for bit. Outputs below STREAM_MIN_BYTES stay in the caches for whoever
reads them next; the kernel ends with a fence, so the streamed lines are visible to the thread
that joins it. A kernel that evaluates a transcendental per element (softmax's exp) does not
stream: it is compute-bound on two cores, its plain stores drain while it computes, and
non-temporal ones stalled it (softmax [4096,1024], one thread: 2.34 -> 2.53 ms; two threads,
CPU time of both: 2.50 -> 2.85 ms); layernorm's rows are cheap, and stream (two threads, CPU
time 2.44 -> 2.05 ms, wall best-of-60 1.6-2.2 -> 1.2-1.6 ms on a loaded machine).
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.llvm_types import I64, storage_type
from hlort.codegen.llvm.loops import emit_loop
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import OP_DEFS
from hlort_cpu.codegen import code_settings

LINE = 64  # bytes of one cache line and one vector move
STREAM_MIN_BYTES = 4 << 20  # as the transpose kernel's streaming stores (transpose_kernel.py)
STREAM_ROW_MAX_BYTES = 32 << 10  # the rows of all streamed outputs together: within L1
code_settings.declare(__name__, "LINE", "STREAM_MIN_BYTES", "STREAM_ROW_MAX_BYTES")


def streamed_outputs(
    comp: Computation, outputs: list[Instruction], element_outs: list[int], row_size: int
) -> list[int]:
    """The element outputs (positions) to stream: big, rows of whole lines, rows fitting L1,
    of a kernel without a transcendental per element."""
    in_dims = outputs[element_outs[0]].shape.dims if element_outs else ()
    if any(
        OP_DEFS[i.opcode].transcendental and i.shape.is_array and i.shape.dims == in_dims
        for i in comp.instructions
    ):
        return []
    picked, total = [], 0
    for k in element_outs:
        s = outputs[k].shape
        row_bytes = row_size * s.dtype.itemsize
        if row_bytes == 0 or row_bytes % LINE or s.size * s.dtype.itemsize < STREAM_MIN_BYTES:
            continue
        if total + row_bytes > STREAM_ROW_MAX_BYTES:
            continue
        picked.append(k)
        total += row_bytes
    return picked


class RowStream:
    """Stack rows for the streamed outputs and the copy that ends each row."""

    def __init__(
        self,
        b: ir.IRBuilder,
        outputs: list[Instruction],
        picked: list[int],
        out_ptrs: list[ir.Value],
        row_size: int,
    ):
        self.b = b
        self.row_size = row_size
        self.rows: dict[int, ir.Value] = {}
        self.out_ptrs = out_ptrs
        self.outputs = outputs
        aligned = ir.Constant(ir.IntType(1), 1)
        for k in picked:
            row = b.alloca(storage_type(outputs[k].shape.dtype), size=i64(row_size))
            row.align = LINE
            self.rows[k] = row
            low = b.and_(b.ptrtoint(out_ptrs[k], I64), i64(LINE - 1))
            aligned = b.and_(aligned, b.icmp_unsigned("==", low, i64(0)))
        self.aligned = aligned

    def target(self, k: int) -> tuple[ir.Value, bool]:
        """Where output ``k``'s row elements go: (pointer, True: at the index within the row)."""
        row = self.rows.get(k)
        return (self.out_ptrs[k], False) if row is None else (row, True)

    def flush(self, o: ir.Value) -> None:
        """Copy row ``o`` of every streamed output from its stack row to the output."""
        if not self.rows:
            return
        b = self.b
        with b.if_else(self.aligned) as (then, otherwise):
            with then:
                self._copy(o, streaming=True)
            with otherwise:
                self._copy(o, streaming=False)

    def _copy(self, o: ir.Value, streaming: bool) -> None:
        b = self.b
        vec = ir.VectorType(ir.IntType(32), LINE // 4)
        for k, row in self.rows.items():
            lines = self.row_size * self.outputs[k].shape.dtype.itemsize // LINE
            dst_row = b.mul(o, i64(lines))

            def move(v: ir.Value, row=row, k=k, dst_row=dst_row) -> None:
                lines_ptr = b.bitcast(row, ir.PointerType(vec))
                src = b.gep(lines_ptr, [v], inbounds=True, source_etype=vec)
                value = b.load(src, typ=vec, align=LINE)
                dst = b.gep(self.out_ptrs[k], [b.add(dst_row, v)], inbounds=True, source_etype=vec)
                store = b.store(value, dst, align=LINE if streaming else 1)
                if streaming:
                    store.set_metadata("nontemporal", _nontemporal(b.module))

            emit_loop(b, i64(0), i64(lines), move, "stream" if streaming else "copy")

    def finish(self) -> None:
        """After the row loop: order the streamed stores before the kernel returns."""
        if self.rows:
            self.b.fence("seq_cst")


def _nontemporal(module: ir.Module) -> ir.MDValue:
    return module.add_metadata([ir.Constant(ir.IntType(32), 1)])
