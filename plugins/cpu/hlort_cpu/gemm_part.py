"""A part of a matmul as a native kernel: the pool's workers call NumPy's cblas gemm with no Python.

``np.matmul`` needs the GIL to start, so a big dot split across Python threads paid a GIL
hand-off per part on top of the pool's. This kernel, ``void(ptr table, i64 begin, i64 end)``
like every pooled kernel, runs the product's rows (or batch matrices) ``[begin, end)`` as
single-threaded gemm calls on the BLAS NumPy links (blas_functions.py), so dot_split.py hands
it to the native pool like any fused kernel.

The table is 19 int64 words: gemm's address, a, b, c, mode (0 rows of a and c, 1 batch
matrices, 2 columns of b and c), batch, m, n, k, lda, ldb, ldc, trans a, trans b, the batch
strides of a, b and c (elements), a's element step per row and b's per column (the leading
dimension, or 1 when transposed). An operand BLAS cannot take as it is (no unit stride in
either of its last two dimensions, a dtype other than f32/f64) gets no table: the caller keeps
NumPy's path.
"""

from __future__ import annotations

import ctypes
import re

import numpy as np

from hlort_cpu.array_address import address
from hlort_cpu.blas_functions import gemm
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.compiled import KERNEL_CFUNC
from hlort_cpu.native_function import native_function

ROWS, BATCH, COLS = 0, 1, 2
_NO_TRANS, _TRANS = 111, 112
_TABLE = ctypes.c_void_p * 19  # the kernels' pointer-table type; every word is an int64

_IR = """
define void @NAME(ptr %t, i64 %s, i64 %e) {
entry:
  %fn = load ptr, ptr %t, align 8
  %ap = getelementptr inbounds i64, ptr %t, i64 1
  %a = load ptr, ptr %ap, align 8
  %bp = getelementptr inbounds i64, ptr %t, i64 2
  %b = load ptr, ptr %bp, align 8
  %cp = getelementptr inbounds i64, ptr %t, i64 3
  %c = load ptr, ptr %cp, align 8
  %f = getelementptr inbounds i64, ptr %t, i64 4
  %mode = load i64, ptr %f, align 8
  %f5 = getelementptr inbounds i64, ptr %t, i64 5
  %batch = load i64, ptr %f5, align 8
  %f6 = getelementptr inbounds i64, ptr %t, i64 6
  %m = load i64, ptr %f6, align 8
  %f7 = getelementptr inbounds i64, ptr %t, i64 7
  %n = load i64, ptr %f7, align 8
  %f8 = getelementptr inbounds i64, ptr %t, i64 8
  %k = load i64, ptr %f8, align 8
  %f9 = getelementptr inbounds i64, ptr %t, i64 9
  %lda = load i64, ptr %f9, align 8
  %f10 = getelementptr inbounds i64, ptr %t, i64 10
  %ldb = load i64, ptr %f10, align 8
  %f11 = getelementptr inbounds i64, ptr %t, i64 11
  %ldc = load i64, ptr %f11, align 8
  %f12 = getelementptr inbounds i64, ptr %t, i64 12
  %ta64 = load i64, ptr %f12, align 8
  %f13 = getelementptr inbounds i64, ptr %t, i64 13
  %tb64 = load i64, ptr %f13, align 8
  %f14 = getelementptr inbounds i64, ptr %t, i64 14
  %abs = load i64, ptr %f14, align 8
  %f15 = getelementptr inbounds i64, ptr %t, i64 15
  %bbs = load i64, ptr %f15, align 8
  %f16 = getelementptr inbounds i64, ptr %t, i64 16
  %cbs = load i64, ptr %f16, align 8
  %f17 = getelementptr inbounds i64, ptr %t, i64 17
  %arow = load i64, ptr %f17, align 8
  %f18 = getelementptr inbounds i64, ptr %t, i64 18
  %bcol = load i64, ptr %f18, align 8
  %ta = trunc i64 %ta64 to i32
  %tb = trunc i64 %tb64 to i32
  %rows_mode = icmp eq i64 %mode, 0
  %batch_mode = icmp eq i64 %mode, 1
  %cols_mode = icmp eq i64 %mode, 2
  %r0 = select i1 %rows_mode, i64 %s, i64 0
  %r1 = select i1 %rows_mode, i64 %e, i64 %m
  %b0 = select i1 %batch_mode, i64 %s, i64 0
  %b1 = select i1 %batch_mode, i64 %e, i64 %batch
  %c0 = select i1 %cols_mode, i64 %s, i64 0
  %c1 = select i1 %cols_mode, i64 %e, i64 %n
  %rows = sub i64 %r1, %r0
  %cols = sub i64 %c1, %c0
  %a_off = mul i64 %r0, %arow
  %b_off = mul i64 %c0, %bcol
  %c_row = mul i64 %r0, %ldc
  %c_off = add i64 %c_row, %c0
  %rows_i = CAST i64 %rows to INT
  %n_i = CAST i64 %cols to INT
  %k_i = CAST i64 %k to INT
  %lda_i = CAST i64 %lda to INT
  %ldb_i = CAST i64 %ldb to INT
  %ldc_i = CAST i64 %ldc to INT
  %any = icmp slt i64 %b0, %b1
  br i1 %any, label %body, label %done
body:
  %i = phi i64 [%b0, %entry], [%i1, %body]
  %ai = mul i64 %i, %abs
  %ai2 = add i64 %ai, %a_off
  %pa = getelementptr inbounds REAL, ptr %a, i64 %ai2
  %bi0 = mul i64 %i, %bbs
  %bi = add i64 %bi0, %b_off
  %pb = getelementptr inbounds REAL, ptr %b, i64 %bi
  %ci = mul i64 %i, %cbs
  %ci2 = add i64 %ci, %c_off
  %pc = getelementptr inbounds REAL, ptr %c, i64 %ci2
  call void %fn(i32 101, i32 %ta, i32 %tb, INT %rows_i, INT %n_i, INT %k_i, REAL 1.0,
                ptr %pa, INT %lda_i, ptr %pb, INT %ldb_i, REAL 0.0, ptr %pc, INT %ldc_i)
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %b1
  br i1 %more, label %body, label %done
done:
  ret void
}
"""


def _ir(name: str, real: str, int_bits: int) -> str:
    cast = r"add i64 \1, 0" if int_bits == 64 else r"trunc i64 \1 to i32"
    text = re.sub(r"CAST i64 (%\w+) to INT", cast, _IR)
    return text.replace("NAME", name).replace("REAL", real).replace("INT", f"i{int_bits}")


@code_settings.memo
def part_kernel(double: bool):
    """The gemm-part kernel for f64 (``double``) or f32, or None without a cblas gemm."""
    function = gemm(double)
    if function is None:
        return None
    text = _ir("P", "double" if double else "float", function.int_bits)
    address = native_function("gemm-part", "gemm_part", lambda name: _named(text, name))
    return KERNEL_CFUNC(address)


def _named(text: str, name: str) -> str:
    return text.replace("@P(", f"@{name}(")


def _matrix(x: np.ndarray, rows: int, cols: int) -> tuple[int, int, int, int] | None:
    """(leading dimension, trans, row step, column step) of the last two dims for row-major
    gemm, or None."""
    size = x.itemsize
    rs, cs = x.strides[-2:]
    if rs % size or cs % size or rs < 0 or cs < 0:
        return None
    rs, cs = rs // size, cs // size
    if cs == 1 and rs >= max(1, cols):
        return rs, _NO_TRANS, rs, 1
    if rs == 1 and cs >= max(1, rows):
        return cs, _TRANS, 1, cs
    return None


def _batch_stride(x: np.ndarray) -> int | None:
    if x.ndim == 2 or x.shape[0] == 1:
        return 0
    stride = x.strides[0]
    return stride // x.itemsize if stride >= 0 and stride % x.itemsize == 0 else None


def part_plan(a: np.ndarray, b: np.ndarray, out: np.ndarray, mode: int):
    """(kernel, the table's bytes with the three addresses zero) for ``out = a @ b`` in parts
    of ``mode``, or None (see above); it depends only on shapes, strides and dtypes. The bytes
    are copied into a fresh table per call (:func:`fill`): building one from 19 Python ints
    cost ~6 us, a copy ~1."""
    dtype = out.dtype
    if dtype not in (np.float32, np.float64) or a.dtype != dtype or b.dtype != dtype:
        return None
    if out.ndim not in (2, 3) or a.ndim > out.ndim or b.ndim > out.ndim:
        return None
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = out.shape[0] if out.ndim == 3 else 1
    kernel = part_kernel(dtype == np.float64)
    shapes_ok = out.shape[-2:] == (m, n) and b.shape[-2] == k and min(m, n, k) > 0
    if (
        kernel is None
        or not shapes_ok
        or any(x.ndim == 3 and x.shape[0] not in (1, batch) for x in (a, b))
    ):
        return None
    la, lb = _matrix(a, m, k), _matrix(b, k, n)
    strides = [_batch_stride(x) for x in (a, b, out)]
    ldc = out.strides[-2] // out.itemsize
    c_ok = out.strides[-1] == out.itemsize and out.strides[-2] % out.itemsize == 0 and ldc >= n
    if la is None or lb is None or None in strides or not c_ok:
        return None
    words = (gemm(dtype == np.float64).address, 0, 0, 0, mode, batch, m, n, k)
    words += (la[0], lb[0], ldc, la[1], lb[1], *strides, la[2], lb[3])
    return kernel, bytes(_TABLE(*words))


def fill(plan, a: np.ndarray, b: np.ndarray, out: np.ndarray):
    """The table of ``plan`` (from :func:`part_plan`) for these arrays: a fresh one per call,
    so two threads running the same dot never share one."""
    table = _TABLE.from_buffer_copy(plan[1])
    table[1], table[2], table[3] = address(a), address(b), address(out)
    return table


def part_table(a: np.ndarray, b: np.ndarray, out: np.ndarray, mode: int):
    """(kernel, table) computing ``out = a @ b`` in parts of ``mode``, or None (see above)."""
    plan = part_plan(a, b, out, mode)
    return None if plan is None else (plan[0], fill(plan, a, b, out))
