"""Small, narrow dots of the DotThunk in the register-blocked LLVM matmul (codegen/small_gemm.py).

OpenBLAS pays a fixed cost per call (argument checks, packing both operands into panels, a
kernel tuned for big tiles) that a narrow product does not amortize: measured single-threaded
on a Zen 3 (f32, warm caches), [128,512]x[512,10] 28 us in gemm against 22 us here,
[128,10]x[10,512] 25 against 17, [256,256]x[256,16] 30 against 21, [64,64]x[64,64] 8 against 6;
inside an MLP training step's program, with its operands fresh from the previous kernel, the
gemm calls of those shapes took 66-95 us. So a dot takes this path when all of these hold:

- plain BLAS arithmetic: f32 or f64 operands and result of one type (no conversion, no
  integers, no complex: contraction_arithmetic.py);
- both operands are strided views of their buffers as planned (no copy) and the rhs rows are
  contiguous (unit column stride), as the emitter needs; a transposed rhs (a weight gradient's
  ``dy^T``) is first copied to C order when the lhs has at least ``COPY_MIN_ROWS`` rows (the
  copy is then at most 1/16 of the work: [128,10]x[10,512] with the rhs transposed took 81 us
  in gemm in the MLP step, 17 us here plus a 5120-element copy);
- fewer than ``dot_split.SPLIT_MIN_PRODUCTS`` products in all, so it would run on one thread
  anyway (bigger products are split across the pool as BLAS calls, dot_split.py), and at least
  ``SMALL_DOT_MIN_PRODUCTS``: each kernel costs a compile (~20-40 ms of LLVM code generation,
  measured), which a dot whose gemm takes a few microseconds does not repay;
- at least 2 rows and 4 columns (a matrix-vector product is memory-bound: gemv does it well,
  a masked vector of one lane here would not), and narrow: at most ``NARROW`` columns, or at
  most ``NARROW`` contracted elements with at least 64 rows (with few rows and wide rows the
  emitter's output stores dominate: [16,16]x[16,1024] was slower than gemm).

Each output element is the fma chain in order of k (small_gemm.py), within the usual dot bound
of the interpreter's sum, as BLAS's order is. The kernel, ``void(ptr a, ptr b, ptr c)``, is
compiled once per (shape, strides, dtype) and kept in the compile cache.
"""

from __future__ import annotations

import ctypes

import llvmlite.ir as ir

from hlort.sha256 import sha256
from hlort_cpu.codegen import code_settings
from hlort_cpu.codegen.small_gemm import SmallGemm, emit_small_gemm
from hlort_cpu.version import PLUGIN_VERSION

SMALL_DOT_MAX_PRODUCTS = 1 << 20  # dot_split.SPLIT_MIN_PRODUCTS: never split on the pool
SMALL_DOT_MIN_PRODUCTS = 1 << 16  # below, gemm's overhead is a few us: not worth a compile
NARROW = 64
COPY_MIN_ROWS = 16
_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def small_dot_gemm(
    double: bool,
    lhs_strides: tuple[int, ...] | None,
    rhs_strides: tuple[int, ...] | None,
    batch: int,
    m: int,
    n: int,
    k: int,
) -> tuple[SmallGemm, bool] | None:
    """(the emitter's description of ``[batch, m, k] x [batch, k, n]`` with these planned
    element strides (``(bs, rs, cs)``, or ``(rs, cs)`` without a batch), whether the rhs is
    first copied to C order), or None when the dot should stay with BLAS (see the module
    docstring). A transposed rhs (unit row stride) is copied when it is small next to the
    work (at least ``COPY_MIN_ROWS`` rows of lhs per row of the copy)."""
    if lhs_strides is None or rhs_strides is None:
        return None
    products = batch * m * n * k
    if not SMALL_DOT_MIN_PRODUCTS <= products < SMALL_DOT_MAX_PRODUCTS:
        return None
    if m < 2 or n < 4 or k < 1:
        return None
    if not (n <= NARROW or (k <= NARROW and m >= 64)):
        return None
    copy = rhs_strides[-1] != 1
    if copy and m < COPY_MIN_ROWS:
        return None
    a_bs = lhs_strides[0] if len(lhs_strides) == 3 else 0
    a_rs, a_cs = lhs_strides[-2:]
    if copy:  # the C-ordered copy of [batch, k, n]
        b_rs, b_bs = n, (k * n if batch > 1 else 0)
    else:
        b_rs, b_bs = rhs_strides[-2], (rhs_strides[0] if len(rhs_strides) == 3 else 0)
    return SmallGemm(double, batch, m, n, k, a_rs, a_cs, a_bs, b_rs, b_bs), copy


@code_settings.memo
def small_dot_kernel(g: SmallGemm):
    """The compiled ``void(ptr a, ptr b, ptr c)`` computing ``g`` (compile cache first)."""
    from hlort_cpu import compile_cache
    from hlort_cpu.codegen.jit import jit_engine

    engine = jit_engine()
    probe = _module_text("P", g, engine.target.vector_bits)
    digest = sha256(probe.encode()).hexdigest()[:16]
    key = compile_cache.cache_key(f"small-dot-{digest}", PLUGIN_VERSION, engine.key)
    name = f"hl{key[:16]}_small_dot"
    cached = compile_cache.lookup(key)
    if cached is None:
        obj = engine.compile_ir(_module_text(name, g, engine.target.vector_bits))
        compile_cache.store(key, obj, [name])
    else:
        obj = cached[0]
    return _FN(engine.load_object(obj, [name])[name])


def _module_text(name: str, g: SmallGemm, vector_bits: int) -> str:
    module = ir.Module(name=name)
    emit_small_gemm(module, name, g, vector_bits)
    return str(module)
