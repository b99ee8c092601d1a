"""A dot and the row fusion that reads it, in one dispatch: each thread runs its gemm row panel,
then the fusion on exactly those rows while they are still in its cache.

``softmax(relu(x @ w + b))`` ran as a split sgemm (dot_split.py: each of the two threads a
panel of rows), a join, then the bias+relu+softmax row kernel split across the threads again:
the kernel read the whole product back cold, and the program paid two fork/joins. When a dot's
product is cut by rows and the next step is a row kernel that reads the product row-locally
(row ``r`` of every output needs only row ``r`` of the product: :func:`row_local`), a
:class:`DotEpilogue` runs, for each row part, the gemm part and then the kernel on that part's
rows, one chunk of one pool dispatch. The gemm parts are dot_split's (the same calls on the same
rows as the dot alone) and a row kernel computes each row by the same code whatever its range
(row_loops.py: one outer iteration per row), so the bits are those of the two steps run one after
the other. Whatever the plan does not fit at run time (one thread, a product not cut by rows, a
kernel output that shares memory with the dot's operands) runs the two steps as before.
"""

from __future__ import annotations

import ctypes
import functools
import math

import numpy as np

from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.shape import TupleShape
from hlort_cpu import blas_threads
from hlort_cpu.array_address import address
from hlort_cpu.spin_pool import native_pool
from hlort_cpu.thread_pool import crowded, worker_count

_VOID_P = ctypes.c_void_p
_RECORD = _VOID_P * 6  # gemm part, its table, the kernel, its table, the kernel's bounds
_IR = """
define void @NAME(ptr %record, i64 %begin, i64 %end) {
entry:
  %gemm = load ptr, ptr %record, align 8
  %p1 = getelementptr inbounds ptr, ptr %record, i64 1
  %gemm_table = load ptr, ptr %p1, align 8
  %p2 = getelementptr inbounds ptr, ptr %record, i64 2
  %kernel = load ptr, ptr %p2, align 8
  %p3 = getelementptr inbounds ptr, ptr %record, i64 3
  %kernel_table = load ptr, ptr %p3, align 8
  %p4 = getelementptr inbounds i64, ptr %record, i64 4
  %kernel_begin = load i64, ptr %p4, align 8
  %p5 = getelementptr inbounds i64, ptr %record, i64 5
  %kernel_end = load i64, ptr %p5, align 8
  call void %gemm(ptr %gemm_table, i64 %begin, i64 %end)
  call void %kernel(ptr %kernel_table, i64 %kernel_begin, i64 %kernel_end)
  ret void
}
"""


@functools.cache
def trampoline():
    """``void(ptr record, i64 begin, i64 end)``: ``record[0](record[1], begin, end)`` (a gemm
    part), then ``record[2](record[3], record[4], record[5])`` (the kernel on its rows)."""
    from hlort_cpu.codegen.compiled import KERNEL_CFUNC
    from hlort_cpu.native_function import native_function

    address = native_function("dot-epilogue", "dot_epilogue", lambda n: _IR.replace("NAME", n))
    return KERNEL_CFUNC(address)


def row_local(comp: Computation, index: int, rows: tuple[int, ...]) -> bool:
    """Whether every output of ``comp`` leads with the dimensions ``rows`` and its row (an
    index of those) reads only the same row of parameter ``index``: the parameter reaches the
    outputs through elementwise ops, broadcasts that keep the row dimensions first, reduces of
    other dimensions, and get-tuple-element; values made without it may be anything."""
    param = comp.parameters[index]
    if not _leads(param.shape, rows):
        return False
    root = comp.root
    outs = root.operands if root.opcode is Opcode.TUPLE else [root]
    by_row = {param}  # values led by the row dimensions, each row from the param's row
    for instr in comp.post_order():
        if instr is param or instr is root and outs is root.operands:
            continue
        if not any(o in by_row for o in instr.operands):
            continue
        if not _keeps_rows(instr, by_row, rows):
            return False
        by_row.add(instr)
    return all(o in by_row for o in outs)


def _leads(shape, rows: tuple[int, ...]) -> bool:
    return shape.is_array and tuple(shape.dims[: len(rows)]) == rows


def _keeps_rows(instr, by_row: set, rows: tuple[int, ...]) -> bool:
    """Whether ``instr``, some operand of which is in ``by_row``, is in it too."""
    lead, op = len(rows), instr.opcode
    if isinstance(instr.shape, TupleShape):
        if op is not Opcode.REDUCE or not all(_leads(s, rows) for s in instr.shape.leaf_shapes()):
            return False
    elif not _leads(instr.shape, rows):
        return False
    if op is Opcode.GET_TUPLE_ELEMENT:
        return True
    if instr.is_elementwise:
        return all(o not in by_row or o.shape.dims == instr.shape.dims for o in instr.operands)
    if op is Opcode.BROADCAST:
        return list(instr.attrs["dimensions"])[:lead] == list(range(lead))
    if op is Opcode.REDUCE:
        n = len(instr.operands) // 2
        inits_free = not any(o in by_row for o in instr.operands[n:])
        return inits_free and min(instr.attrs["dimensions"], default=lead) >= lead
    return False


class DotEpilogue:
    """``dot`` (a DotThunk) then ``kernel`` (a KernelThunk reading the product row-locally),
    each part of the split product one chunk: its gemm, then the kernel on its rows.
    ``unit``: product rows per unit of the gemm parts' ranges (1 for rows, m for batch
    matrices); ``per``: rows per iteration of the kernel (a flat loop's block of rows)."""

    def __init__(self, dot, kernel, unit: int, per: int, rows: int):
        self.dot, self.kernel = dot, kernel
        self.unit, self.per, self.rows = unit, per, rows
        self.label = f"{dot.label} + {kernel.kernel.info.kind} epilogue"
        # one output array and no scratch: its pointer table made here, as KernelThunk's
        # simple path makes it (a split kernel's general path cost a few microseconds more)
        self.simple = not kernel.is_tuple and len(kernel.shapes) == 1 and not kernel.empty
        self.addresses = (None, _address(kernel.fn))  # (gemm part kernel, row kernel)
        self.bounds = (None, None)  # (the gemm parts' ranges, the kernel's for each) or None

    def __call__(self, env) -> None:
        kernel = self.kernel
        given = env[kernel.out]  # an arena view may reuse the bytes of the dot's operands
        parts = None
        if given is None or not any(np.may_share_memory(given, env[i]) for i in self.dot.ins):
            parts = self.dot.row_parts(env)
        bounds = None if parts is None else self._kernel_bounds(parts[2])
        if bounds is None:
            if parts is not None:  # parts whose rows the kernel's iterations do not fit
                self.dot.finish_row_parts(parts)
            else:
                self.dot(env)
            kernel(env)
            return
        gemm, gemm_table, ranges, alive = parts
        arrays = [env[i] for i in kernel.ins]
        if self.simple and all(a.flags.c_contiguous for a in arrays):
            out = kernel.new_output() if given is None else given
            table = kernel.ptr_type(*[address(a) for a in arrays], address(out))
            env[kernel.out] = out
        else:
            _fn, table, _ranges, arrays = kernel.native_parts(env)
        gemm_address, kernel_address = self.addresses
        if gemm_address is None:  # the dtype's gemm-part kernel, the same on every call
            gemm_address = _address(gemm)
            self.addresses = (gemm_address, kernel_address)
        words = [gemm_address, ctypes.addressof(gemm_table), kernel_address]
        words.append(ctypes.addressof(table))
        records = [_RECORD(*words, begin, end) for begin, end in bounds]
        with blas_threads.single_threaded():
            _run(records, ranges)
        del alive, arrays  # alive until every chunk has run

    def _kernel_bounds(self, ranges) -> list | None:
        """The kernel's iterations for each gemm part's rows (kept per ranges object), or None
        when a part's rows do not start (or end) on an iteration's first row."""
        known, bounds = self.bounds
        if known is ranges:
            return bounds
        bounds, unit, per = [], self.unit, self.per
        for begin, end in ranges:
            first, last = begin * unit, end * unit
            if first % per or (last % per and last != self.rows):
                bounds = None
                break
            bounds.append((first // per, -(-last // per)))
        self.bounds = (ranges, bounds)
        return bounds


def _address(fn) -> int:
    return ctypes.cast(fn, _VOID_P).value


def _run(records: list, ranges) -> None:
    n = len(ranges)
    fn = trampoline()
    pool = native_pool(worker_count() - 1) if n > 1 else None
    if pool is None or crowded(pool, ranges):  # in order on this thread (thread_pool.crowded)
        for record, (begin, end) in zip(records, ranges, strict=True):
            fn(record, begin, end)
        return
    tables = (_VOID_P * n)(*[ctypes.addressof(r) for r in records])
    pool.run(fn, None, tables, ranges.bounds(), n)


def chain_epilogues(schedule: list) -> list:
    """``schedule`` ((step, released slots) pairs) with each dot that the next step's row
    kernel reads row-locally run with it as one :class:`DotEpilogue` (the kernel's place left
    to a no-op that keeps its releases)."""
    out = list(schedule)
    for i in range(len(out) - 1):
        dot, kernel = out[i][0], out[i + 1][0]
        fit = _fit(dot, kernel)
        if fit is not None:
            out[i] = (DotEpilogue(dot, kernel, *fit), out[i][1])
            out[i + 1] = (_noop, out[i + 1][1])
    return out


def _noop(env) -> None:
    return None


def _fit(dot, kernel) -> tuple[int, int, int] | None:
    """(unit, rows per kernel iteration, rows) when ``kernel`` may run on ``dot``'s parts."""
    spec = getattr(dot, "epilogue_rows", None)
    info = getattr(getattr(kernel, "kernel", None), "info", None)
    comp = getattr(kernel, "fusion", None)
    if spec is None or info is None or comp is None or dot.out not in kernel.ins:
        return None
    rows, unit = spec
    if len(kernel.ranges) < 2:
        return None  # a kernel too small to split runs on the caller: no second dispatch
    if (
        info.split
        or info.scratch_bytes
        or not all(row_local(comp, k, rows) for k, slot in enumerate(kernel.ins) if slot == dot.out)
    ):
        return None
    count, n, per_iteration = math.prod(rows), dot.product_shape[-1], info.elements_per_iteration
    if info.kind == "row_reduce" and info.extent == count:
        return unit, 1, count  # one row an iteration
    if info.kind != "loop" or any(i.opcode is Opcode.TRANSPOSE for i in comp.instructions):
        return None  # (a loop with a transpose may run in tiles)
    if any(tuple(dims) != (*rows, n) for dims, _ in kernel.shapes):
        return None  # a loop's iterations walk its outputs (the extents below check it too)
    if per_iteration == n and info.extent == count:
        return unit, 1, count  # a row an iteration
    if per_iteration % n == 0 and info.extent == -(-count * n // per_iteration):
        return unit, per_iteration // n, count  # a flat loop: blocks of whole rows
    return None
