"""A native while driver's kernel call split in two halves on the native pool.

A kernel of an RNN cell (an LSTM's gates: three sigmoids and two tanh per element) can cost as
much per trip as the cell's recurrent matmul, yet runs single-threaded in the driver. A call
planned with ``pool`` (driver arguments: the pool's state and its dispatch function,
spin_pool_ir.py) runs its outer range ``[0, extent)`` as ``[0, h)`` and ``[h, extent)``, the
first on this thread and the second on the pool's worker, when that worker is awake (spinning
after its last chunk: no sleeper counted); with a null dispatch (one thread, no pool) or a worker
asleep (as on a loaded machine, whose spin budget drops to zero) one call runs the whole range
here, as before: a futex wake costs ~100 us. Only kernels whose ranges are independent (no
split reduce's combine pass, no scratch) are planned so, so the halves write exactly the
elements, and the bits, of the whole call: as a kernel thunk splitting across cores.
"""

from __future__ import annotations

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.llvm_types import I1, I8, I32, I64, PTR, VOID
from hlort_cpu.spin_pool_ir import SLEEPERS

_RUN_TYPE = ir.FunctionType(VOID, [PTR, PTR, PTR, PTR, PTR, I64])


def halves_table(b: ir.IRBuilder, extent: int) -> ir.Value:
    """The two ranges' bounds, ``[0, h, h, extent]``, stored once at the builder (the driver's
    entry, before the loop): nothing in them changes between trips."""
    ranges = b.alloca(ir.ArrayType(I64, 4))
    half = (extent + 1) // 2
    for k, value in enumerate((0, half, half, extent)):
        b.store(i64(value), b.gep(ranges, [i64(0), i64(k)], inbounds=True))
    return ranges


def emit_pooled_call(
    b: ir.IRBuilder, args, pool: tuple[int, int], kernel, table, ranges, extent: int
) -> None:
    """Call ``kernel(table, begin, end)`` over ``[0, extent)``: two halves on the pool when its
    dispatch is set and its worker awake, else one call on this thread."""
    state = args[pool[0]]
    run_address = b.ptrtoint(args[pool[1]], I64)
    start = b.block
    check = b.function.append_basic_block("pool.check")
    join = b.function.append_basic_block("pool.join")
    b.cbranch(b.icmp_unsigned("==", run_address, i64(0)), join, check)
    b.position_at_end(check)
    word = b.gep(state, [i64(SLEEPERS)], inbounds=True, source_etype=I8)
    sleepers = b.load_atomic(word, "monotonic", 4, typ=I32)
    asleep = b.icmp_unsigned("!=", sleepers, ir.Constant(I32, 0))
    b.branch(join)
    b.position_at_end(join)
    alone = b.phi(I1)
    alone.add_incoming(ir.Constant(I1, 1), start)
    alone.add_incoming(asleep, check)
    table_ptr = b.inttoptr(b.ptrtoint(table, I64), PTR)
    with b.if_else(alone) as (here, pooled):
        with here:
            b.call(kernel, [table_ptr, i64(0), i64(extent)])
        with pooled:
            run = b.inttoptr(run_address, ir.PointerType(_RUN_TYPE))
            ranges_ptr = b.inttoptr(b.ptrtoint(ranges, I64), PTR)
            b.call(run, [state, kernel, table_ptr, ir.Constant(PTR, None), ranges_ptr, i64(2)])


def emit_pool_wake(b: ir.IRBuilder, args, pool: tuple[int, int], name: str) -> None:
    """At the driver's entry: when the dispatch is set and the worker sleeps, dispatch two
    empty chunks (``name``, defined here), which wakes it and returns at once (this thread
    claims both; the worker, awake late, spins its budget). Without it a loop whose program
    dispatched nothing before it would never find the worker awake, and no step would split.
    The thunk passes a null dispatch while other work crowds the cores (thread_pool.crowded)."""
    module = b.module
    noop = module.globals.get(name)
    if noop is None:
        noop = ir.Function(module, ir.FunctionType(VOID, [PTR, I64, I64]), name)
        noop.linkage = "internal"
        ir.IRBuilder(noop.append_basic_block("entry")).ret_void()
    state = args[pool[0]]
    run_address = b.ptrtoint(args[pool[1]], I64)
    ranges = halves_table(b, 2)
    check = b.function.append_basic_block("wake.check")
    wake = b.function.append_basic_block("wake.call")
    done = b.function.append_basic_block("wake.done")
    b.cbranch(b.icmp_unsigned("==", run_address, i64(0)), done, check)
    b.position_at_end(check)
    word = b.gep(state, [i64(SLEEPERS)], inbounds=True, source_etype=I8)
    sleepers = b.load_atomic(word, "monotonic", 4, typ=I32)
    b.cbranch(b.icmp_unsigned("!=", sleepers, ir.Constant(I32, 0)), wake, done)
    b.position_at_end(wake)
    run = b.inttoptr(run_address, ir.PointerType(_RUN_TYPE))
    null = ir.Constant(PTR, None)
    b.call(run, [state, noop, null, null, b.inttoptr(b.ptrtoint(ranges, I64), PTR), i64(2)])
    b.branch(done)
    b.position_at_end(done)
