"""A register-blocked matmul emitted in LLVM IR, for the small dots of RNN cells in loops.

At the sizes of a recurrent cell ([batch 8..64] x [hidden] x [4 hidden]) a BLAS gemm spends about
a third of its time packing the weight matrix into panels, every call, and a threaded BLAS on a
busy machine can stall for milliseconds waiting for its helper threads. This emitter packs
nothing: the right operand must have unit column stride (row-major [k, n] rows, any row
stride), so each of its rows is a few contiguous vectors; a block of ``rows`` x ``vectors``
vector accumulators (:func:`blocking`: 12 with AVX2's 16 registers, 24 with AVX-512's 32)
stays in registers over the whole sum, one fused multiply-add per product (``llvm.fma``), the
left operand's element broadcast; the k loop does ``K_UNROLL`` steps per iteration (LLVM's
unroller is off). Blocks run column-block outer and row-block inner, so a column panel of the
right operand (``k`` x a few vectors) stays in cache while every row block uses it. The edges
are the same block with fewer rows and masked vector loads and stores (``llvm.masked.*``), so
there is no scalar tail.

Each output element is ``fma(a[i, k-1], b[k-1, j], ... fma(a[i, 0], b[0, j], +0))``: products
summed in order of k in the operands' own type, one rounding per step, within the usual dot bound
of any BLAS order. The function is ``void name(ptr a, ptr b, ptr c)``; ``c`` is C-ordered
[batch, m, n]; strides are in elements.
"""

from __future__ import annotations

from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.llvm_types import F32, F64, I1, I8, I32, I64, PTR, VOID
from hlort.codegen.llvm.loops import emit_loop
from hlort_cpu.codegen import code_settings
from hlort_cpu.spin_pool_ir import SLEEPERS

SMALL_GEMM_MAX_PRODUCTS = 1 << 24  # m * n * k per matrix; larger dots go to BLAS
K_UNROLL = 2  # steps of k per loop iteration (LLVM's unroller is off: llvm_start.py)
code_settings.declare(__name__, "SMALL_GEMM_MAX_PRODUCTS", "K_UNROLL")


@dataclass(frozen=True)
class SmallGemm:
    """``c[b] = a[b] @ b[b]``: a is [m, k] with element strides (a_rs, a_cs), b is [k, n] with
    row stride b_rs and unit column stride; batch strides in elements."""

    double: bool
    batch: int
    m: int
    n: int
    k: int
    a_rs: int
    a_cs: int
    a_bs: int
    b_rs: int
    b_bs: int


@dataclass(frozen=True)
class SmallDot:
    """A native while step: ``gemm`` on the buffers at refs ``a``, ``b``, ``c``, as function
    ``name`` (defined in the driver's module)."""

    name: str
    a: object
    b: object
    c: object
    gemm: SmallGemm
    pool: tuple[int, int] | None = None  # driver args (pool state, its run function): split


def emit_small_dot(
    b: ir.IRBuilder, step: SmallDot, pointer, memset: ir.Function, vector_bits: int, args=None
) -> None:
    """Emit ``step`` at the builder: define its function, then call it (K = 0: zeros). A step
    with ``pool`` runs its column blocks in two halves on the native pool (spin_pool_ir.py's
    dispatch, whose address the driver's arguments hold) when the pool's worker is awake
    (spinning after its last chunk, no sleeper counted); with a null address, or a worker
    asleep (as on a loaded machine, where its spin budget drops to zero), one call on this
    thread: a futex wake costs ~100 us, a preempted worker holding a half far more."""
    g = step.gemm
    size = 8 if g.double else 4
    if g.batch * g.m * g.n == 0:
        return
    c = pointer(step.c)
    if g.k == 0:
        b.call(
            memset,
            [c, ir.Constant(ir.IntType(8), 0), i64(g.batch * g.m * g.n * size), ir.Constant(I1, 0)],
        )
        return
    if step.pool is None or args is None:
        fn = emit_small_gemm(b.module, step.name, g, vector_bits)
        b.call(fn, [pointer(step.a), pointer(step.b), c])
        return
    fn = emit_small_gemm(b.module, step.name, g, vector_bits, ranged=True)
    total = column_blocks(g, vector_bits)
    here, entry = b.block, b.function.entry_basic_block
    b.position_at_start(entry)  # fixed stack slots, not one per trip
    table = b.alloca(ir.ArrayType(PTR, 3))
    ranges = b.alloca(ir.ArrayType(I64, 4))
    b.position_at_end(here)
    for k, value in enumerate((pointer(step.a), pointer(step.b), c)):
        b.store(value, b.gep(table, [i64(0), i64(k)], inbounds=True))
    half = (total + 1) // 2
    for k, value in enumerate((0, half, half, total)):
        b.store(i64(value), b.gep(ranges, [i64(0), i64(k)], inbounds=True))
    table_ptr = b.inttoptr(b.ptrtoint(table, I64), PTR)
    ranges_ptr = b.inttoptr(b.ptrtoint(ranges, I64), PTR)
    run_type = ir.FunctionType(VOID, [PTR, PTR, PTR, PTR, PTR, I64])
    run_address = b.ptrtoint(args[step.pool[1]], I64)
    no_pool = b.icmp_unsigned("==", run_address, i64(0))
    start = b.block
    check = b.function.append_basic_block("pool.check")
    join = b.function.append_basic_block("pool.join")
    b.cbranch(no_pool, join, check)
    b.position_at_end(check)  # the worker's sleeper count (its state's SLEEPERS word)
    word = b.gep(args[step.pool[0]], [i64(SLEEPERS)], inbounds=True, source_etype=I8)
    sleepers = b.load_atomic(word, "monotonic", 4, typ=I32)
    asleep = b.icmp_unsigned("!=", sleepers, ir.Constant(I32, 0))
    b.branch(join)
    b.position_at_end(join)
    alone_now = b.phi(I1)
    alone_now.add_incoming(ir.Constant(I1, 1), start)
    alone_now.add_incoming(asleep, check)
    with b.if_else(alone_now) as (alone, pooled):
        with alone:
            b.call(fn, [table_ptr, i64(0), i64(total)])
        with pooled:
            run = b.inttoptr(run_address, ir.PointerType(run_type))
            null = ir.Constant(PTR, None)
            b.call(run, [args[step.pool[0]], fn, table_ptr, null, ranges_ptr, i64(2)])


def column_blocks(g: SmallGemm, vector_bits: int) -> int:
    """How many column blocks (the last one masked when n is not a multiple) ``g`` has."""
    lanes = max(1, vector_bits // (64 if g.double else 32))
    _, vectors = blocking(vector_bits, g.double, g.n)
    return -(-g.n // (lanes * vectors))


def blocking(vector_bits: int, double: bool, n: int) -> tuple[int, int]:
    """(rows, vectors) of the register block: ``rows * vectors`` accumulators, ``vectors``
    loads of b and ``rows`` broadcasts of a per step of k. With 16 vector registers (AVX2) 12
    accumulators keep both FMA pipes busy through the FMA latency (the 4 x 2 block left them
    a third idle: measured 16x128x512 f32 37 -> 30 us, 16x32x512 9.0 -> 7.8 us on a Zen 3):
    4 rows x 3 vectors, or 6 x 2 when two vectors span all of n. AVX-512's 32 registers hold
    8 x 3 (24 accumulators, 3 loads of b, a broadcast): measured against 8 x 2 on a Sapphire
    Rapids-class Xeon (minimum of 60 interleaved rounds), 16x128x512 f32 11.2 -> 9.9 us,
    16x32x512 f32 3.0 -> 2.8 us, 16x128x512 f64 24.8 -> 22.4 us."""
    lanes = max(1, vector_bits // (64 if double else 32))
    if vector_bits >= 512:
        return (8, 2) if n <= 2 * lanes else (8, 3)
    return (6, 2) if n <= 2 * lanes else (4, 3)


def emit_small_gemm(
    module: ir.Module,
    name: str,
    g: SmallGemm,
    vector_bits: int,
    block_shape: tuple[int, int] | None = None,
    unroll: int | None = None,
    ranged: bool = False,
) -> ir.Function:
    """Define ``name`` computing ``g`` (see the module docstring); ``block_shape`` (rows,
    vectors) overrides :func:`blocking`, ``unroll`` the steps of k per loop iteration
    (``K_UNROLL`` as it is now).
    ``ranged``: ``void(ptr table, i64 begin, i64 end)`` as the pool's kernels, the table
    holding a, b and c, computing column blocks [begin, end) of a batch of one."""
    unroll = K_UNROLL if unroll is None else unroll
    real = F64 if g.double else F32
    size = 8 if g.double else 4
    lanes = max(1, vector_bits // (8 * size))
    vec = ir.VectorType(real, lanes)
    rows_per_block, vectors = block_shape or blocking(vector_bits, g.double, g.n)
    params = [PTR, I64, I64] if ranged else [PTR, PTR, PTR]
    fn = ir.Function(module, ir.FunctionType(VOID, params), name)
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    if ranged:
        if g.batch != 1:
            raise ValueError("a ranged small gemm computes one matrix")
        words = [b.gep(fn.args[0], [i64(k)], inbounds=True, source_etype=PTR) for k in range(3)]
        a_base, b_base, c_base = (b.load(w, typ=PTR) for w in words)
    else:
        a_base, b_base, c_base = fn.args
    fma = _intrinsic(module, f"llvm.fma.v{lanes}{_suffix(real)}", vec, [vec, vec, vec])
    mask_type = ir.VectorType(I1, lanes)
    load_masked = _intrinsic(
        module, f"llvm.masked.load.v{lanes}{_suffix(real)}.p0", vec, [PTR, I32, mask_type, vec]
    )
    store_masked = _intrinsic(
        module, f"llvm.masked.store.v{lanes}{_suffix(real)}.p0", VOID, [vec, PTR, I32, mask_type]
    )
    zero = ir.Constant(vec, [0.0] * lanes)
    width = lanes * vectors

    def element(base: ir.Value, index: ir.Value) -> ir.Value:
        return b.gep(base, [index], inbounds=True, source_etype=real)

    def step(ab, bb, row0, col0, rows, masks, kk, accs):
        """One step of k: the accumulators after adding a[:, kk] * b[kk, :]."""
        b_row = b.add(b.mul(kk, i64(g.b_rs)), col0)
        b_vecs = []
        for v, mask in enumerate(masks):
            ptr = element(bb, b.add(b_row, i64(v * lanes)))
            b_vecs.append(
                b.load(ptr, typ=vec, align=size)
                if mask is None
                else b.call(load_masked, [ptr, ir.Constant(I32, size), mask, zero])
            )
        a_col = b.mul(kk, i64(g.a_cs))
        new = []
        for r in range(rows):
            a_index = b.add(b.mul(b.add(row0, i64(r)), i64(g.a_rs)), a_col)
            scalar = b.load(element(ab, a_index), typ=real)
            splat = b.shuffle_vector(
                b.insert_element(ir.Constant(vec, ir.Undefined), scalar, ir.Constant(I32, 0)),
                ir.Constant(vec, ir.Undefined),
                ir.Constant(ir.VectorType(I32, lanes), [0] * lanes),
            )
            new.append(
                [b.call(fma, [splat, bv, acc]) for bv, acc in zip(b_vecs, accs[r], strict=True)]
            )
        return new

    def block(
        ab: ir.Value,
        bb: ir.Value,
        cb: ir.Value,
        row0: ir.Value,
        col0: ir.Value,
        rows: int,
        valid: int,
    ) -> None:
        """rows x ``valid`` columns (``valid`` <= width) of c from row0, col0: the steps of k
        in order, ``unroll`` per loop iteration, the remainder after the loop."""
        parts = -(-valid // lanes)
        masks = []
        for v in range(parts):
            count = min(lanes, valid - v * lanes)
            masks.append(
                None
                if count == lanes
                else ir.Constant(mask_type, [1] * count + [0] * (lanes - count))
            )
        accs = [[zero] * parts for _ in range(rows)]
        trips, rest = divmod(g.k, unroll)
        if trips:
            pre = b.block
            loop = fn.append_basic_block("k")
            done = fn.append_basic_block("k.end")
            b.branch(loop)
            b.position_at_end(loop)
            kk = b.phi(I64)
            kk.add_incoming(i64(0), pre)
            phis = [[b.phi(vec) for _ in range(parts)] for _ in range(rows)]
            for row in phis:
                for acc in row:
                    acc.add_incoming(zero, pre)
            new = phis
            for u in range(unroll):
                new = step(ab, bb, row0, col0, rows, masks, b.add(kk, i64(u)), new)
            nxt = b.add(kk, i64(unroll))
            end = b.block
            kk.add_incoming(nxt, end)
            for row, new_row in zip(phis, new, strict=True):
                for acc, value in zip(row, new_row, strict=True):
                    acc.add_incoming(value, end)
            b.cbranch(b.icmp_signed("<", nxt, i64(trips * unroll)), loop, done)
            b.position_at_end(done)
            accs = new
        for u in range(rest):
            accs = step(ab, bb, row0, col0, rows, masks, i64(trips * unroll + u), accs)
        for r in range(rows):
            c_row = b.add(b.mul(b.add(row0, i64(r)), i64(g.n)), col0)
            for v, mask in enumerate(masks):
                ptr = element(cb, b.add(c_row, i64(v * lanes)))
                if mask is None:
                    b.store(accs[r][v], ptr, align=size)
                else:
                    b.call(store_masked, [accs[r][v], ptr, ir.Constant(I32, size), mask])

    full_rows, tail_rows = divmod(g.m, rows_per_block)
    full_cols, tail_cols = divmod(g.n, width)

    def column(ab, bb, cb, col0: ir.Value, valid: int) -> None:
        if full_rows:
            emit_loop(
                b,
                i64(0),
                i64(full_rows),
                lambda rb: block(
                    ab, bb, cb, b.mul(rb, i64(rows_per_block)), col0, rows_per_block, valid
                ),
                "rows",
            )
        if tail_rows:
            block(ab, bb, cb, i64(full_rows * rows_per_block), col0, tail_rows, valid)

    def matrix(index: ir.Value, begin: ir.Value | None = None, end: ir.Value | None = None):
        """Column blocks [begin, end) of matrix ``index`` (all of them without a range)."""
        ab = element(a_base, b.mul(index, i64(g.a_bs)))
        bb = element(b_base, b.mul(index, i64(g.b_bs)))
        cb = element(c_base, b.mul(index, i64(g.m * g.n)))
        start, stop = (i64(0), i64(full_cols)) if begin is None else (begin, end)
        if full_cols:
            if begin is not None:
                stop = b.select(b.icmp_signed("<", end, i64(full_cols)), end, i64(full_cols))
            emit_loop(
                b,
                start,
                stop,
                lambda cblock: column(ab, bb, cb, b.mul(cblock, i64(width)), width),
                "cols",
            )
        if tail_cols and begin is None:
            column(ab, bb, cb, i64(full_cols * width), tail_cols)
        elif tail_cols:  # the tail is block full_cols
            with b.if_then(b.icmp_signed(">", end, i64(full_cols))):
                column(ab, bb, cb, i64(full_cols * width), tail_cols)

    if g.m and g.n and g.k:
        if ranged:
            matrix(i64(0), fn.args[1], fn.args[2])
        else:
            emit_loop(b, i64(0), i64(g.batch), matrix, "batch")
    b.ret_void()
    return fn


def _suffix(real: ir.Type) -> str:
    return "f64" if real == F64 else "f32"


def _intrinsic(module: ir.Module, name: str, ret: ir.Type, args: list) -> ir.Function:
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, ir.FunctionType(ret, args), name)
