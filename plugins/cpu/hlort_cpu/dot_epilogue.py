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

import numpy as np

from hlort.ir.computation import Computation
from hlort.ir.opcodes import Opcode
from hlort.shape import TupleShape
from hlort_cpu import blas_threads
from hlort_cpu.array_address import address
from hlort_cpu.spin_pool import native_pool
from hlort_cpu.thread_pool import crowded, worker_count

_VOID_P = ctypes.c_void_p
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
  call void %gemm(ptr %gemm_table, i64 %begin, i64 %end)
  call void %kernel(ptr %kernel_table, i64 %begin, i64 %end)
  ret void
}
"""


@functools.cache
def trampoline():
    """``void(ptr record, i64 begin, i64 end)``: ``record[0](record[1], begin, end)``, then
    ``record[2](record[3], begin, end)``."""
    from hlort_cpu.codegen.compiled import KERNEL_CFUNC
    from hlort_cpu.native_function import native_function

    address = native_function("dot-epilogue", "dot_epilogue", lambda n: _IR.replace("NAME", n))
    return KERNEL_CFUNC(address)


def row_local(comp: Computation, index: int, rows: int) -> bool:
    """Whether every output of ``comp`` has ``rows`` rows (dimension 0) and its row ``r`` reads
    only row ``r`` of parameter ``index``: the parameter reaches the outputs through elementwise
    ops, broadcasts that keep dimension 0 first, reduces that keep dimension 0, and
    get-tuple-element; values made without it (other parameters, constants) may be anything."""
    param = comp.parameters[index]
    if not param.shape.is_array or not param.shape.dims or param.shape.dims[0] != rows:
        return False
    by_row = {param}  # values whose dimension 0 is the row, each row from the param's row
    for instr in comp.post_order():
        if instr is param or not any(o in by_row for o in instr.operands):
            continue
        if not _keeps_rows(instr, by_row, rows):
            return False
        by_row.add(instr)
    root = comp.root
    outs = root.operands if root.opcode is Opcode.TUPLE else [root]
    return all(o in by_row for o in outs)


def _keeps_rows(instr, by_row: set, rows: int) -> bool:
    """Whether ``instr``, some operand of which is in ``by_row``, is in it too."""
    shape = instr.shape
    if isinstance(shape, TupleShape):
        leaves = shape.leaf_shapes()
        if instr.opcode is not Opcode.REDUCE or any(
            not s.dims or s.dims[0] != rows for s in leaves
        ):
            return False
    elif not shape.is_array or not shape.dims or shape.dims[0] != rows:
        return False
    op = instr.opcode
    if op is Opcode.GET_TUPLE_ELEMENT:
        return True
    if instr.is_elementwise:
        return all(o not in by_row or o.shape.dims == shape.dims for o in instr.operands)
    if op is Opcode.BROADCAST:
        dims = list(instr.attrs["dimensions"])
        return bool(dims) and dims[0] == 0
    if op is Opcode.REDUCE:
        n = len(instr.operands) // 2
        inits_free = not any(o in by_row for o in instr.operands[n:])
        return inits_free and 0 not in instr.attrs["dimensions"]
    return False


class DotEpilogue:
    """``dot`` (a DotThunk) then ``kernel`` (a KernelThunk reading the product row-locally),
    each row part of the split product one chunk: its gemm, then the kernel on its rows."""

    def __init__(self, dot, kernel):
        self.dot, self.kernel = dot, kernel
        self.label = f"{dot.label} + {kernel.kernel.info.kind} epilogue"
        # the kernel's one-chunk call as KernelThunk's simple path makes it: one fresh output
        self.simple = kernel.simple and not kernel.is_tuple
        self.addresses = (None, _address(kernel.fn))  # (gemm part kernel, row kernel)

    def __call__(self, env) -> None:
        kernel = self.kernel
        given = env[kernel.out]  # an arena view may reuse the bytes of the dot's operands
        parts = None
        if given is None or not any(np.may_share_memory(given, env[i]) for i in self.dot.ins):
            parts = self.dot.row_parts(env)
        if parts is None:
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
        record = (_VOID_P * 4)(gemm_address, ctypes.addressof(gemm_table), kernel_address)
        record[3] = ctypes.addressof(table)
        with blas_threads.single_threaded():
            _run(record, ranges)
        del alive, arrays  # alive until every chunk has run


def _address(fn) -> int:
    return ctypes.cast(fn, _VOID_P).value


def _run(record, ranges) -> None:
    n = len(ranges)
    fn = trampoline()
    pool = native_pool(worker_count() - 1) if n > 1 else None
    if pool is None or crowded(pool):  # in order on this thread (thread_pool.crowded)
        for begin, end in ranges:
            fn(record, begin, end)
        return
    pool.run(fn, record, None, ranges.bounds(), n)


def chain_epilogues(schedule: list) -> list:
    """``schedule`` ((step, released slots) pairs) with each dot that the next step's row
    kernel reads row-locally run with it as one :class:`DotEpilogue` (the kernel's place left
    to a no-op that keeps its releases)."""
    out = list(schedule)
    for i in range(len(out) - 1):
        dot, kernel = out[i][0], out[i + 1][0]
        if _chains(dot, kernel):
            out[i] = (DotEpilogue(dot, kernel), out[i][1])
            out[i + 1] = (_noop, out[i + 1][1])
    return out


def _noop(env) -> None:
    return None


def _chains(dot, kernel) -> bool:
    rows = getattr(dot, "epilogue_rows", None)
    info = getattr(getattr(kernel, "kernel", None), "info", None)
    comp = getattr(kernel, "fusion", None)
    if rows is None or info is None or comp is None or dot.out not in kernel.ins:
        return False
    if info.kind != "row_reduce" or info.split or info.scratch_bytes or info.extent != rows:
        return False
    used = [k for k, slot in enumerate(kernel.ins) if slot == dot.out]
    return all(row_local(comp, k, rows) for k in used)
