"""Dots with few output columns (a classifier's [256,1024]x[1024,10]) as dot products along k.

BLAS vectorizes along the output's columns: with 10 columns a 16-lane vector is 10/16 used and
every fma waits on a broadcast of a, so [256,1024]x[1024,10] took 181 us in OpenBLAS inside an
MLP's program (29 GFLOP/s on one thread of a core that does ~170). Here each output element is
a dot product of a row of a (contiguous along k) with a column of b (contiguous along k once b
is transposed: a copy of n*k elements, 1/m of the work). A block of R rows by n columns keeps
R*n vector accumulators, each k step loads R + n vectors for R*n fmas with every lane used
(and prefetches the next block's rows), and a masked step takes the k % lanes tail. Each sum
is then its lanes' partial sums added in a tree: an order like BLAS's (which has none fixed),
within the usual dot bound of the interpreter's sum; NaN and infinities propagate through the
fmas as in any sum. The small-matmul kernel keeps the dots below MIN_PRODUCTS.

The kernel is ``void(ptr table, i64 begin, i64 end)`` over rows, so the pool splits it like any
fused kernel. Its table is 7 int64 words: a, bt (b transposed), c, k, lda, ldbt, ldc (elements).
One kernel per (dtype, n) serves every m and k (they are in the table), compiled once and kept
in the compile cache.
"""

from __future__ import annotations

import ctypes

import numpy as np

from hlort_cpu.codegen import code_settings
from hlort_cpu.gemm_part import address
from hlort_cpu.thread_pool import Ranges, run_chunks, worker_count

MAX_COLUMNS = 16  # beyond, a vector along the columns is mostly full: BLAS or the small kernel
# below, the small-matmul kernel (small_dot.py) does better: measured on [128,512]x[512,10]
# with cold inputs, 32 us there against 50 here (the transposed copy of b and the call's Python)
MIN_PRODUCTS = 1 << 20
POOL_MIN_PRODUCTS = 1 << 18  # ~5 us of fma on one core: parts repay a pool hand-off
ACCUMULATORS = {512: 24, 256: 12, 128: 6}  # vector registers for accumulators (of 32/16/16)
_TABLE = ctypes.c_void_p * 7


def _lanes(double: bool, vector_bits: int) -> int:
    return vector_bits // (64 if double else 32)


def block_rows(n: int, vector_bits: int) -> int:
    """Rows per register block: as many as keep R*n accumulators in registers (at least 1)."""
    return max(1, min(4, ACCUMULATORS.get(vector_bits, 6) // n))


def _block(name: str, rows: int, n: int, real: str, vec: str, lanes: int, next_label: str):
    """IR of the loop over blocks of ``rows`` rows, entered at ``{name}.head`` with
    ``%{name}.first`` set by the caller's phi (see :func:`kernel_ir`); leaves to next_label."""
    p = name
    zero = "zeroinitializer"
    accs = [(r, j) for r in range(rows) for j in range(n)]
    out = [f"{p}.head:"]
    out.append(f"  %{p}.i = phi i64 [%{p}.first, %{p}.pre], [%{p}.inext, %{p}.tail]")
    out.append(f"  %{p}.last = add i64 %{p}.i, {rows}")
    out.append(f"  %{p}.ok = icmp sle i64 %{p}.last, %e")
    out.append(f"  br i1 %{p}.ok, label %{p}.rows, label %{next_label}")
    out.append(f"{p}.rows:")
    for r in range(rows):
        out.append(f"  %{p}.row{r} = add i64 %{p}.i, {r}")
        out.append(f"  %{p}.ao{r} = mul i64 %{p}.row{r}, %lda")
        out.append(f"  %{p}.pa{r} = getelementptr inbounds {real}, ptr %a, i64 %{p}.ao{r}")
    out.append(f"  br i1 %anyk, label %{p}.k, label %{p}.tail")
    out.append(f"{p}.k:")
    out.append(f"  %{p}.kk = phi i64 [0, %{p}.rows], [%{p}.kn, %{p}.k]")
    for r, j in accs:
        out.append(f"  %{p}.s{r}_{j} = phi {vec} [{zero}, %{p}.rows], [%{p}.f{r}_{j}, %{p}.k]")
    _step(out, p, rows, n, real, vec, f"%{p}.kk", None, "s", "f")
    for r in range(rows):  # the next block's rows, one line each per step (see the docstring)
        out.append(f"  %{p}.nx{r} = getelementptr {real}, ptr %{p}.fpa{r}, i64 %ahead")
        out.append(f"  call void @llvm.prefetch.p0(ptr %{p}.nx{r}, i32 0, i32 3, i32 1)")
    out.append(f"  %{p}.kn = add i64 %{p}.kk, {lanes}")
    out.append(f"  %{p}.more = icmp slt i64 %{p}.kn, %kv")
    out.append(f"  br i1 %{p}.more, label %{p}.k, label %{p}.tail")
    out.append(f"{p}.tail:")
    for r, j in accs:
        out.append(f"  %{p}.t{r}_{j} = phi {vec} [{zero}, %{p}.rows], [%{p}.f{r}_{j}, %{p}.k]")
    _step(out, p, rows, n, real, vec, "%kv", "%mask", "t", "g")
    for r, j in accs:
        out.append(
            f"  %{p}.sum{r}_{j} = call reassoc {real} @llvm.vector.reduce.fadd.{_suffix(vec)}"
            f"({real} 0.0, {vec} %{p}.g{r}_{j})"
        )
    for r in range(rows):
        out.append(f"  %{p}.co{r} = mul i64 %{p}.row{r}, %ldc")
        for j in range(n):
            out.append(f"  %{p}.ci{r}_{j} = add i64 %{p}.co{r}, {j}")
            out.append(
                f"  %{p}.pc{r}_{j} = getelementptr inbounds {real}, ptr %c, i64 %{p}.ci{r}_{j}"
            )
            out.append(f"  store {real} %{p}.sum{r}_{j}, ptr %{p}.pc{r}_{j}, align 4")
    out.append(f"  %{p}.inext = add i64 %{p}.i, {rows}")
    out.append(f"  br label %{p}.head")
    return out


def _suffix(vec: str) -> str:
    lanes, real = vec.strip("<>").split(" x ")
    return f"v{lanes}{'f64' if real == 'double' else 'f32'}"


def _step(out, p, rows, n, real, vec, kk, mask, acc, new):
    """One k step at element ``kk`` of R row vectors and n bt vectors (masked when ``mask``)."""
    sfx = _suffix(vec)
    for r in range(rows):
        out.append(f"  %{p}.{new}pa{r} = getelementptr inbounds {real}, ptr %{p}.pa{r}, i64 {kk}")
        out.append(_load(f"%{p}.{new}va{r}", vec, sfx, f"%{p}.{new}pa{r}", mask))
    for j in range(n):
        out.append(f"  %{p}.{new}bo{j} = add i64 %bo{j}, {kk}")
        out.append(
            f"  %{p}.{new}pb{j} = getelementptr inbounds {real}, ptr %bt, i64 %{p}.{new}bo{j}"
        )
        out.append(_load(f"%{p}.{new}vb{j}", vec, sfx, f"%{p}.{new}pb{j}", mask))
    for r in range(rows):
        for j in range(n):
            out.append(
                f"  %{p}.{new}{r}_{j} = call {vec} @llvm.fma.{sfx}({vec} %{p}.{new}va{r}, "
                f"{vec} %{p}.{new}vb{j}, {vec} %{p}.{acc}{r}_{j})"
            )


def _load(dest: str, vec: str, sfx: str, ptr: str, mask: str | None) -> str:
    if mask is None:
        return f"  {dest} = load {vec}, ptr {ptr}, align 4"
    lanes = vec.strip("<>").split(" x ")[0]
    return (
        f"  {dest} = call {vec} @llvm.masked.load.{sfx}.p0(ptr {ptr}, i32 4, "
        f"<{lanes} x i1> {mask}, {vec} zeroinitializer)"
    )


def kernel_ir(name: str, double: bool, n: int, vector_bits: int) -> str:
    """The module text of the kernel for ``n`` columns (see the module docstring)."""
    real = "double" if double else "float"
    lanes = _lanes(double, vector_bits)
    vec = f"<{lanes} x {real}>"
    sfx = _suffix(vec)
    rows = block_rows(n, vector_bits)
    lane_ids = ", ".join(f"i32 {i}" for i in range(lanes))
    text = [f"define void @{name}(ptr %t, i64 %s, i64 %e) {{", "entry:"]
    for i, field in enumerate(("a", "bt", "c")):
        text.append(f"  %{field}p = getelementptr inbounds i64, ptr %t, i64 {i}")
        text.append(f"  %{field} = load ptr, ptr %{field}p, align 8")
    for i, field in enumerate(("k", "lda", "ldbt", "ldc"), start=3):
        text.append(f"  %{field}p = getelementptr inbounds i64, ptr %t, i64 {i}")
        text.append(f"  %{field} = load i64, ptr %{field}p, align 8")
    text.append(f"  %kv = and i64 %k, {-lanes}")
    text.append("  %anyk = icmp sgt i64 %kv, 0")
    text.append("  %rem64 = sub i64 %k, %kv")
    text.append("  %rem = trunc i64 %rem64 to i32")
    text.append(f"  %remv = insertelement <{lanes} x i32> poison, i32 %rem, i64 0")
    text.append(
        f"  %rems = shufflevector <{lanes} x i32> %remv, <{lanes} x i32> poison, "
        f"<{lanes} x i32> zeroinitializer"
    )
    text.append(f"  %mask = icmp ult <{lanes} x i32> <{lane_ids}>, %rems")
    for j in range(n):
        text.append(f"  %bo{j} = mul i64 %ldbt, {j}")
    text.append(f"  %ahead = mul i64 %lda, {rows}")
    blocks = [("main", rows)] + ([("rest", 1)] if rows > 1 else [])
    text.append("  br label %main.pre")
    text.append("main.pre:")
    text.append("  %main.first = add i64 %s, 0")
    text.append("  br label %main.head")
    for idx, (label, r) in enumerate(blocks):
        if idx > 0:
            prev = blocks[idx - 1][0]
            text.append(f"{label}.pre:")
            text.append(f"  %{label}.first = add i64 %{prev}.i, 0")
            text.append(f"  br label %{label}.head")
        nxt = f"{blocks[idx + 1][0]}.pre" if idx + 1 < len(blocks) else "done"
        text += _block(label, r, n, real, vec, lanes, nxt)
    text += ["done:", "  ret void", "}"]
    text.append(f"declare {vec} @llvm.fma.{sfx}({vec}, {vec}, {vec})")
    text.append(f"declare {real} @llvm.vector.reduce.fadd.{sfx}({real}, {vec})")
    text.append(f"declare {vec} @llvm.masked.load.{sfx}.p0(ptr, i32, <{lanes} x i1>, {vec})")
    text.append("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)")
    return "\n".join(text) + "\n"


@code_settings.memo
def narrow_kernel(double: bool, n: int):
    """The compiled kernel for ``n`` columns of f64 (``double``) or f32 (compile cache first)."""
    from hlort_cpu.codegen.compiled import KERNEL_CFUNC
    from hlort_cpu.native_function import native_function

    bits = _vector_bits()
    address = native_function(
        "narrow-dot", "narrow_dot", lambda name: kernel_ir(name, double, n, bits)
    )
    return KERNEL_CFUNC(address)


def takes(double: bool, lhs_strides, batch: int, m: int, n: int, k: int) -> bool:
    """Whether a plain f32/f64 dot of these sizes runs here: one matrix, lhs rows contiguous
    along k (planned view strides ``(rs, 1)``), 2..MAX_COLUMNS columns, at least one vector
    of k and MIN_PRODUCTS products."""
    if lhs_strides is None or batch != 1 or lhs_strides[-1] != 1:
        return False
    lanes = _lanes(double, _vector_bits())
    return 2 <= n <= MAX_COLUMNS and k >= lanes and m * n * k >= MIN_PRODUCTS and m >= 1


def _vector_bits() -> int:
    from hlort_cpu.codegen.jit import jit_engine

    return jit_engine().target.vector_bits


class NarrowDot:
    """``c = a @ b`` for one [m, k] x [k, n] product that :func:`takes` accepts."""

    def __init__(self, double: bool, m: int, n: int, k: int):
        self.kernel = narrow_kernel(double, n)
        self.dtype = np.dtype(np.float64 if double else np.float32)
        self.k = k
        rows = block_rows(n, _vector_bits())
        workers = worker_count()
        parts = workers if workers > 1 and m * n * k >= POOL_MIN_PRODUCTS else 1
        per_part = -(-m // parts)
        step = -(-per_part // rows) * rows  # a multiple of the block: one rest loop at most
        self.ranges = Ranges((s, min(s + step, m)) for s in range(0, m, step))
        # bt's rows one cache line longer than k: rows a multiple of 4 KiB apart map to the same
        # L1 sets, and n of them (with a's rows) overflowed its ways (measured on
        # [256,1024]x[1024,10]: 82 us with k-long rows, 64 padded)
        self.bt_shape = (n, k + 64 // self.dtype.itemsize)
        self.words = bytes(_TABLE(0, 0, 0, k, 0, self.bt_shape[1], n))  # a, bt, c, lda: per call

    def __call__(self, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
        """``a``: [m, k] with unit column stride; ``b``: [k, n] (any strides); ``out``:
        C-ordered [m, n]."""
        bt = np.empty(self.bt_shape, self.dtype)
        np.copyto(bt[:, : self.k], b.T)
        table = _TABLE.from_buffer_copy(self.words)  # per call: threads never share one
        table[0], table[1], table[2] = address(a), address(bt), address(out)
        table[4] = a.strides[0] // self.dtype.itemsize
        run_chunks(self.kernel, table, self.ranges)
