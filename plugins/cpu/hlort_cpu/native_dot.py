"""Dots of a native while loop as steps of the loop's driver: a small matmul emitted in LLVM,
or a call to the cblas gemm NumPy links.

Only dots whose arithmetic is plain BLAS in the operands' own type qualify (f32 or f64 operands
and result of one type), with each operand a BLAS-ready strided view of its buffer
(``plan_matrix_view``, as the DotThunk plans them: no copy). Those of at most
``SMALL_GEMM_MAX_PRODUCTS`` products per matrix whose rhs rows are contiguous run in the
register-blocked emitter (``hlort_cpu.codegen.small_gemm``; measured on JAX LSTM scans it
matched or beat the BLAS call, which packs the weights every call and whose threads stall on a
busy machine); the others call NumPy's gemm (``blas_functions``) with the DotThunk's layout, so
their results are the DotThunk's bit for bit. Every other dot (integers, f16/bf16, complex,
mixed types, an operand that needs a copy) keeps its loop on the Python path, where the
DotThunk runs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hlort.ir.instruction import Instruction
from hlort_cpu import blas_functions
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.jit import jit_engine
from hlort_cpu.codegen.small_gemm import (
    SMALL_GEMM_MAX_PRODUCTS,
    SmallDot,
    SmallGemm,
    column_blocks,
)
from hlort_cpu.codegen.while_steps import GemmCall, MatrixArg
from hlort_cpu.contraction_arithmetic import plan_arithmetic
from hlort_cpu.dot import dot_groups, plan_matrix_view

GEMM_DTYPES = ("f32", "f64")
POOL_MIN_PRODUCTS = 1 << 18  # ~5 us of fma on one AVX2 core: two halves repay a pool hand-off
code_settings.declare(__name__, "GEMM_DTYPES", "POOL_MIN_PRODUCTS", "SMALL_GEMM_MAX_PRODUCTS")


def pool_min_products(vector_bits: int) -> int:
    """The fewest products a small matmul splits on the pool at: POOL_MIN_PRODUCTS per 256 bits
    of vector, as AVX-512 does them in about half the time. Measured on an AVX-512 Xeon (native
    LSTM loop, driver time, three variants interleaved in one process): splitting the
    [16,32]x[32,512] input dot (2^18 products, 2.8 us) cost 2-3% over running it whole."""
    return POOL_MIN_PRODUCTS * max(1, vector_bits // 256)


def gemm_dtype(instr: Instruction) -> str | None:
    """The dtype name of a dot the driver can run as gemm (see the module docstring), or None."""
    if not instr.shape.is_array or not all(o.shape.is_array for o in instr.operands):
        return None
    lhs, rhs = (o.shape for o in instr.operands)
    result = instr.shape
    name = result.dtype.name
    if name not in GEMM_DTYPES or lhs.dtype.name != name or rhs.dtype.name != name:
        return None
    dn = instr.attrs["dot_dimension_numbers"]
    k = math.prod(lhs.dims[d] for d in dn.lhs_contracting_dims)
    arithmetic = plan_arithmetic(lhs.dtype, rhs.dtype, result.dtype, k, result.size)
    if arithmetic.compute != result.dtype.numpy or arithmetic.needs_finish or arithmetic.ordered:
        return None
    return name


def plan_dot(
    instr: Instruction,
    lhs_ref,
    rhs_ref,
    out_ref,
    function_arg: Callable[[], int],
    small_name: str,
    pool_args: Callable[[], tuple[int, int]] | None = None,
) -> GemmCall | SmallDot | None:
    """The step computing ``instr`` from the buffers at the refs, or None: the small-matmul
    emitter when the dot is small and its rhs rows are contiguous, else BLAS gemm (whose
    address ``function_arg()`` places among the driver's pointer arguments). A small matmul of
    one matrix with at least ``pool_min_products`` products and two column blocks is split in
    two on the native pool (``pool_args()``: the driver arguments of its state and dispatch;
    the thunk passes a null dispatch on one thread, and then one call runs it all)."""
    name = gemm_dtype(instr)
    if name is None:
        return None
    lhs, rhs = (o.shape for o in instr.operands)
    groups = dot_groups(instr)
    a = plan_matrix_view(lhs.dims, groups.lhs, keep_batch=True)
    b = plan_matrix_view(rhs.dims, groups.rhs, keep_batch=True)
    batch, m, k = a.shape
    n = b.shape[2]
    double = name == "f64"
    if m * n * k <= SMALL_GEMM_MAX_PRODUCTS and (
        k == 0
        or batch * m * n == 0
        or (a.strides is not None and b.strides is not None and b.strides[2] == 1)
    ):
        (a_bs, a_rs, a_cs), (b_bs, b_rs, _) = a.strides or (0, 0, 0), b.strides or (0, 0, 0)
        g = SmallGemm(double, batch, m, n, k, a_rs, a_cs, a_bs, b_rs, b_bs)
        bits = jit_engine().target.vector_bits
        pooled = pool_args is not None and batch == 1 and m * n * k >= pool_min_products(bits)
        pooled = pooled and column_blocks(g, bits) >= 2
        return SmallDot(small_name, lhs_ref, rhs_ref, out_ref, g, pool_args() if pooled else None)
    function = blas_functions.gemm(double)
    if function is None:
        return None
    function_arg = function_arg()
    if k == 0 or batch * m * n == 0:  # the driver zero-fills (or skips): no layout to plan
        empty = MatrixArg(lhs_ref, 1, False, 0)
        return GemmCall(
            function_arg,
            name == "f64",
            function.int_bits,
            empty,
            MatrixArg(rhs_ref, 1, False, 0),
            out_ref,
            batch,
            m,
            n,
            k,
        )
    if a.strides is None or b.strides is None:
        return None
    return GemmCall(
        function_arg,
        name == "f64",
        function.int_bits,
        _matrix(lhs_ref, a.strides),
        _matrix(rhs_ref, b.strides),
        out_ref,
        batch,
        m,
        n,
        k,
    )


def _matrix(ref, strides: tuple[int, int, int]) -> MatrixArg:
    """Row-major gemm's view of a [rows, cols] matrix with element strides (rs, cs)."""
    batch_stride, rs, cs = strides
    if cs == 1:
        return MatrixArg(ref, rs, False, batch_stride)
    return MatrixArg(ref, cs, True, batch_stride)
