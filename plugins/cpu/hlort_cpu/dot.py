"""DotThunk: dot_general of every element type as one (batched) matmul, planned at compile time.

Each operand is brought to a [batch, rows, cols] matrix (lhs [batch, m, k], rhs [batch, k, n]).
At compile time :func:`plan_matrix_view` works out whether that matrix is a strided view of the
C-ordered operand that BLAS can take as it is (row-major or transposed, the way ``np.matmul``
passes ``trans`` flags to gemm): then a call builds the view and copies nothing. Otherwise (a free
dimension between two contracting ones, say) one C-ordered copy is made, fused with the
conversion to the compute type when there is one. The result is written by the matmul straight
into a fresh array of the output's shape (batch, lhs free, rhs free are its dimensions in order),
or converted from the compute type once (see :mod:`hlort_cpu.contraction_arithmetic`). Some
products run transposed and are copied back (:func:`runs_transposed` says which and why).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hlort.ir.instruction import Instruction
from hlort_cpu import blas_threads
from hlort_cpu.contraction_arithmetic import ContractionArithmetic, plan_arithmetic
from hlort_cpu.dot_split import FixedSplit, gemm_parts, split_mode
from hlort_cpu.gemm_part import BATCH, ROWS
from hlort_cpu.gemm_part import address as _address
from hlort_cpu.step_groups import DOT
from hlort_cpu.thread_pool import run_chunks, worker_count


def _merged(dims: Sequence[int], strides: Sequence[int]) -> tuple[int, int] | None:
    """(size, stride) of consecutive view dimensions merged into one, or None when the elements
    are not evenly spaced. A group of size 1 reports stride 0 (the caller picks one)."""
    kept = [(d, s) for d, s in zip(dims, strides, strict=True) if d != 1]
    size = math.prod(dims)
    if not kept or size == 0:
        return size, 0
    for (_, outer), (inner_dim, inner) in zip(kept, kept[1:], strict=False):
        if outer != inner * inner_dim:
            return None
    return size, kept[-1][1]


@dataclass(frozen=True)
class MatrixView:
    """``shape``/``strides`` (in elements) of the [batch, rows, cols] view, or None: copy."""

    perm: tuple[int, ...]
    shape: tuple[int, ...]
    strides: tuple[int, ...] | None


def _blas_ready(rows: tuple[int, int], cols: tuple[int, int]) -> bool:
    """NumPy's matmul hands a matrix to gemm when one stride is 1 and the other spans a row."""
    (r, rs), (c, cs) = rows, cols
    return (cs == 1 and rs >= max(c, 1)) or (rs == 1 and cs >= max(r, 1))


def plan_matrix_view(
    dims: Sequence[int], groups: Sequence[Sequence[int]], keep_batch: bool
) -> MatrixView:
    """How the C-ordered array of ``dims`` becomes the matrix whose axes are the merged
    ``groups`` (batch, rows, cols): a BLAS-ready strided view when there is one, else a copy."""
    perm = tuple(d for g in groups for d in g)
    c_strides = [math.prod(dims[d + 1 :]) for d in range(len(dims))]
    merged = [_merged([dims[d] for d in g], [c_strides[d] for d in g]) for g in groups]
    sizes = tuple(math.prod(dims[d] for d in g) for g in groups)
    shape = sizes if keep_batch else sizes[1:]
    if any(m is None for m in merged):
        return MatrixView(perm, shape, None)
    (batch, bs), rows, cols = merged
    r, c = rows[0], cols[0]
    rs = rows[1] if r != 1 else max(c, 1)  # a size-1 axis may take any stride: pick a valid one
    cs = cols[1] if c != 1 else 1
    if not _blas_ready((r, rs), (c, cs)):
        return MatrixView(perm, shape, None)
    strides = (bs, rs, cs) if keep_batch else (rs, cs)
    return MatrixView(perm, shape, strides)


class MatrixOperand:
    """Per call: the operand as its planned matrix in the compute type (a view when planned)."""

    def __init__(self, view: MatrixView, dims: Sequence[int], compute: np.dtype, source: np.dtype):
        self.perm, self.shape = view.perm, view.shape
        self.compute = compute
        self.cast = compute != source
        self.byte_strides = None
        if view.strides is not None:
            self.byte_strides = tuple(s * compute.itemsize for s in view.strides)
        c_strides = tuple(math.prod(view.shape[d + 1 :]) for d in range(len(view.shape)))
        self.as_is = view.strides == c_strides and view.shape == tuple(dims)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.as_is and not self.cast and x.flags.c_contiguous:
            return x  # already the C-ordered matrix
        if self.byte_strides is None:
            return x.transpose(self.perm).astype(self.compute, order="C").reshape(self.shape)
        if self.cast:
            x = x.astype(self.compute, order="C")
        elif not x.flags.c_contiguous:
            x = np.ascontiguousarray(x)
        return np.ndarray(self.shape, self.compute, x, 0, self.byte_strides)


@dataclass(frozen=True)
class DotGroups:
    """A dot_general's operand dimensions grouped as batch, free and contracting."""

    lb: list[int]
    lf: list[int]
    lc: list[int]
    rb: list[int]
    rc: list[int]
    rf: list[int]

    @property
    def lhs(self) -> tuple[list[int], list[int], list[int]]:
        """[batch, m, k]: the grouping ``plan_matrix_view`` takes for the lhs."""
        return self.lb, self.lf, self.lc

    @property
    def rhs(self) -> tuple[list[int], list[int], list[int]]:
        """[batch, k, n] for the rhs."""
        return self.rb, self.rc, self.rf


def dot_groups(instr: Instruction) -> DotGroups:
    dn = instr.attrs["dot_dimension_numbers"]
    lhs, rhs = (o.shape for o in instr.operands)
    lc, rc = list(dn.lhs_contracting_dims), list(dn.rhs_contracting_dims)
    lb, rb = list(dn.lhs_batch_dims), list(dn.rhs_batch_dims)
    lf = [d for d in range(lhs.rank) if d not in lc and d not in lb]
    rf = [d for d in range(rhs.rank) if d not in rc and d not in rb]
    return DotGroups(lb, lf, lc, rb, rc, rf)


class DotThunk:
    """dot_general as ``np.matmul`` on [batch, m, k] x [batch, k, n] (batch dropped when absent)."""

    group_kind = DOT  # may run beside other steps (step_groups.py)

    def __init__(self, instr: Instruction, ins: list[int], out: int):
        lhs, rhs = (o.shape for o in instr.operands)
        g = dot_groups(instr)
        k = math.prod(lhs.dims[d] for d in g.lc)
        result = instr.shape
        self.arithmetic: ContractionArithmetic = plan_arithmetic(
            lhs.dtype, rhs.dtype, result.dtype, k, result.size
        )
        compute = self.arithmetic.compute
        keep_batch = bool(g.lb)
        lhs_view = plan_matrix_view(lhs.dims, g.lhs, keep_batch)
        rhs_view = plan_matrix_view(rhs.dims, g.rhs, keep_batch)
        self.lhs = MatrixOperand(lhs_view, lhs.dims, compute, lhs.dtype.numpy)
        self.rhs = MatrixOperand(rhs_view, rhs.dims, compute, rhs.dtype.numpy)
        self.product_shape = (*self.lhs.shape[:-1], self.rhs.shape[-1])
        self.out_dims = result.dims
        self.reshape_result = self.product_shape != result.dims
        self.result_dtype = result.dtype.numpy
        self.empty = result.size == 0 or k == 0
        self.work = result.size * k  # multiply-adds
        self.ins, self.out = ins, out
        self.split = FixedSplit()  # the operands' layouts are fixed here: planned once
        self.small = None  # the small-matmul kernel (small_dot.py), or None: BLAS
        self.small_copies_rhs = False
        self.narrow = None  # few output columns: dot products along k (narrow_dot.py)
        plain = not self.arithmetic.needs_finish and not self.arithmetic.ordered
        if plain and not self.empty and compute.name in ("float32", "float64"):
            if lhs.dtype.numpy == compute and rhs.dtype.numpy == compute:
                self.narrow = _narrow_dot(compute, lhs_view, self.product_shape, k)
            if self.narrow is None and lhs.dtype.numpy == compute == rhs.dtype.numpy:
                small = _small_kernel(compute, lhs_view, rhs_view, self.product_shape, k)
                if small is not None:
                    self.small, self.small_copies_rhs = small
        # C^T = B^T A^T into a scratch [n, m], copied back transposed (see runs_transposed)
        self.transposed = (
            plain
            and self.narrow is None
            and self.small is None
            and not self.empty
            and lhs.dtype.numpy == compute == rhs.dtype.numpy
            and runs_transposed(compute, lhs_view, rhs_view, self.product_shape, k)
        )

    @property
    def epilogue_rows(self) -> tuple[tuple[int, ...], int] | None:
        """For dot_epilogue.py, when a kernel may run on the gemm parts' rows: (the result's
        dimensions before the last, whose index is the product's row; product rows per unit of
        the parts' ranges: 1 for rows, m for batch matrices), else None. The product must be a
        BLAS one written as it is (not transposed; reshaped only in its leading dimensions)
        that dot_split cuts by rows (2-D) or batch matrices (3-D)."""
        product, dims = self.product_shape, self.out_dims
        if not self.groupable or self.transposed or not dims or dims[-1] != product[-1]:
            return None
        if math.prod(dims[:-1]) != math.prod(product[:-1]):
            return None
        m, n = product[-2:]
        batch = product[0] if len(product) == 3 else 0
        mode = split_mode(batch, m, n, self.work // max(math.prod(product), 1), worker_count())
        if (mode, len(product)) not in ((ROWS, 2), (BATCH, 3)):
            return None
        return tuple(dims[:-1]), (1 if mode == ROWS else m)

    def row_parts(self, env):
        """For dot_epilogue.py: (kernel, table, ranges, what to keep alive) of the gemm parts
        that compute the product (ranges of rows, or of batch matrices), the result already in
        its slot; None (nothing done) when the product is not cut that way here."""
        a = self.lhs(env[self.ins[0]])
        b = self.rhs(env[self.ins[1]])
        result = np.empty(self.product_shape, self.result_dtype)
        parts = self.split.row_parts(a, b, result)
        if parts is None:
            return None
        env[self.out] = result.reshape(self.out_dims) if self.reshape_result else result
        return (*parts, (a, b, result))

    @staticmethod
    def finish_row_parts(parts) -> None:
        """Run :meth:`row_parts`' gemm parts as the dot alone runs them."""
        gemm, table, ranges, _alive = parts
        with blas_threads.single_threaded():
            run_chunks(gemm, table, ranges)

    @property
    def groupable(self) -> bool:
        """Whether :meth:`native_parts` can run it: a BLAS product, no arithmetic to finish."""
        if self.empty or self.narrow is not None or self.small is not None:
            return False
        return not self.arithmetic.needs_finish and not self.arithmetic.ordered

    def native_parts(self, env, whole: bool):
        """For a step group (step_groups.py): the result, already in its slot, as native gemm
        chunks (kernel, table, ranges, what to keep alive), whole or in dot_split's parts;
        when gemm cannot take the operands, the product is computed here and no chunk is left.
        A transposed dot's chunks write its scratch: :meth:`finish_parts` copies it back."""
        a = self.lhs(env[self.ins[0]])
        b = self.rhs(env[self.ins[1]])
        result = np.empty(self.product_shape, self.result_dtype)
        env[self.out] = result.reshape(self.out_dims) if self.reshape_result else result
        target = result
        if self.transposed:
            a, b, target = b.T, a.T, np.empty(self.product_shape[::-1], self.result_dtype)
        parts = gemm_parts(a, b, target, whole)
        if parts is None:
            with np.errstate(over="ignore", invalid="ignore"), blas_threads.single_threaded():
                self.arithmetic.matmul(a, b, out=target)
            if target is not result:
                np.copyto(result, target.T)
            return None, None, (), None
        kernel, table, ranges = parts
        return kernel, table, ranges, (a, b, target, result)

    def finish_parts(self, alive) -> None:
        """After a step group ran :meth:`native_parts`' chunks: a transposed product copied
        back into the result (``alive`` is what native_parts returned to keep)."""
        if alive is not None and alive[2] is not alive[3]:
            np.copyto(alive[3], alive[2].T)

    @property
    def label(self) -> str:
        if self.narrow is not None:
            return "dot (narrow)"
        if self.small is not None:
            return "dot (small matmul)"
        if self.transposed:
            return f"dot ({self.arithmetic.label}, transposed)"
        return f"dot ({self.arithmetic.label})"

    def __call__(self, env) -> None:
        if self.empty:  # no products: every sum is zero (false for pred)
            env[self.out] = np.zeros(self.out_dims, self.result_dtype)
            return
        a = self.lhs(env[self.ins[0]])
        b = self.rhs(env[self.ins[1]])
        if self.narrow is not None:
            result = np.empty(self.product_shape, self.result_dtype)
            self.narrow(a, b, result)
            env[self.out] = result.reshape(self.out_dims) if self.reshape_result else result
            return
        if self.small is not None:
            if self.small_copies_rhs:
                b = np.ascontiguousarray(b)
            result = np.empty(self.product_shape, self.result_dtype)
            self.small(_address(a), _address(b), _address(result))
            env[self.out] = result.reshape(self.out_dims) if self.reshape_result else result
            return
        # one BLAS thread: big products are split across hlort's pool instead (dot_split.py,
        # which limits BLAS's threads itself and calls gemm natively: no NumPy error state)
        arithmetic = self.arithmetic
        if self.transposed:
            env[self.out] = self._transposed(a, b)
            return
        if not arithmetic.needs_finish:
            result = np.empty(self.product_shape, self.result_dtype)
            if arithmetic.ordered or not self.split(a, b, result):
                with np.errstate(over="ignore", invalid="ignore"), blas_threads.single_threaded():
                    arithmetic.matmul(a, b, out=result)
            else:
                arithmetic.repair(a, b, result)  # complex NaN/inf as the interpreter's
        else:
            with np.errstate(over="ignore", invalid="ignore"), blas_threads.single_threaded():
                result = arithmetic.finish(arithmetic.matmul(a, b))
        env[self.out] = result.reshape(self.out_dims) if self.reshape_result else result

    def _transposed(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a @ b`` as ``(b^T @ a^T)^T``: the product in BLAS's other orientation, then one
        transposing copy (NumPy's, in C) into the result's C order."""
        bt, at = b.T, a.T
        flipped = np.empty(self.product_shape[::-1], self.result_dtype)
        if not self.split(bt, at, flipped):
            with np.errstate(over="ignore", invalid="ignore"), blas_threads.single_threaded():
                self.arithmetic.matmul(bt, at, out=flipped)
        result = np.empty(self.product_shape, self.result_dtype)
        np.copyto(result, flipped.T)
        return result.reshape(self.out_dims) if self.reshape_result else result


TRANSPOSED_MIN_DEPTH = 8  # k per row of the result (k >= 8 m) from which running transposed wins
TRANSPOSED_MIN_ROWS = 4  # below, the product is gemv-like and the copy back is the larger cost


def runs_transposed(compute: np.dtype, lhs: MatrixView, rhs: MatrixView, product, k: int) -> bool:
    """Whether an f32 ``[m, k] x [k, n]`` runs as its transpose ``[n, k] x [k, m]``: for a
    row-major lhs and a transposed rhs (``a @ w^T``, JAX's input gradient), few rows
    (4 <= m < n) and a deep contraction (k >= TRANSPOSED_MIN_DEPTH * m). OpenBLAS's sgemm for
    that orientation slows down the fewer rows m has; with the roles swapped the same products
    took, at one thread (medians of interleaved runs), 0.82x (m 64, k 512, n 256) to 0.53x
    (m 8, k 512, n 512) of the time, while copying the [n, m] product back costs ~1 ns an
    element: the gain (~0.25 ns x n x k, falling as 1/m) pays for it from k ~ 4 m, and 8 m keeps
    a margin (k = 4 m measured 1.07x, a loss; m 1-2 1.05-1.11x). f64 is left alone: dgemm has
    no such slow orientation (swapped measured 1.10-1.17x at m 64-96, 0.94x only at m 8)."""
    if len(product) != 2 or compute.name != "float32":
        return False
    if lhs.strides is None or rhs.strides is None:
        return False
    m, n = product
    lhs_rows = lhs.strides[1] == 1 and lhs.strides[0] >= k
    rhs_transposed = rhs.strides[0] == 1 and rhs.strides[1] >= k
    deep = k >= TRANSPOSED_MIN_DEPTH * m
    return lhs_rows and rhs_transposed and TRANSPOSED_MIN_ROWS <= m < n and deep


def _narrow_dot(compute: np.dtype, lhs: MatrixView, product, k: int):
    """The narrow-dot runner for a [m, k] x [k, n] product it takes, else None."""
    from hlort_cpu import narrow_dot

    if len(product) != 2:
        return None
    (m, n), double = product, compute == np.float64
    if not narrow_dot.takes(double, lhs.strides, 1, m, n, k):
        return None
    return narrow_dot.NarrowDot(double, m, n, k)


def _small_kernel(compute: np.dtype, lhs: MatrixView, rhs: MatrixView, product, k: int):
    from hlort_cpu.small_dot import small_dot_gemm, small_dot_kernel

    batch = product[0] if len(product) == 3 else 1
    m, n = product[-2:]
    plan = small_dot_gemm(compute == np.float64, lhs.strides, rhs.strides, batch, m, n, k)
    return None if plan is None else (small_dot_kernel(plan[0]), plan[1])


def dot_thunk(instr: Instruction, ins: list[int], out: int) -> DotThunk | None:
    """A thunk for any array dot (every element type the shape rules accept); None otherwise."""
    if not instr.shape.is_array or not all(o.shape.is_array for o in instr.operands):
        return None
    return DotThunk(instr, ins, out)
