"""FFT on the GPU: one direct-DFT kernel per transformed axis, in complex f64.

The interpreter (hlort.interpreter.ops.fft) runs numpy.fft in complex128 and rounds once; here
each axis is one pass computing every output element of that pass as a sum over the axis,
``out[k] = sum_j in[j] w^(jk)``, in f64 (one thread per output element, grid-stride), with the
twiddles ``w^r = exp(-+2 pi i r / n)`` read from a table of the ``n`` roots NumPy computes at
compile time (indexed by ``j * k mod n``, so no angle is ever large). The passes follow NumPy's
order: FFT / IFFT transform every trailing axis, the last first (IFFT scales each by 1/n);
RFFT is a real forward transform of the last axis keeping its ``n // 2 + 1`` bins, then
complex forward transforms of the others, from the last back; IRFFT is complex inverse
transforms of the leading axes, the first first, then the real inverse of the last one, which
reads only the real parts of the zero and (for even ``n``) Nyquist bins, as pocketfft does.
Intermediate passes write complex f64 scratch; the last rounds once to the result type.

Infinite and NaN inputs: the spec leaves where they lead open (a sum of terms with an infinite
one; XLA's CPU and GPU libraries differ too), so the interpreter (pocketfft) is the reference,
matched as far as a direct sum can: where the interpreter's output part is a number or an
infinity, this one's is the same (an infinity of the same sign, or a number within the
tolerance), and it is NaN only where the interpreter's is. Where pocketfft's butterflies meet
inf - inf in an intermediate step a direct sum may not, so there the interpreter may have NaN
and this a number or an infinity. Two things make it so: a quarter-turn twiddle (1, i, -1,
-i) rotates exactly, multiplying no part by zero (inf * 0 would be NaN where pocketfft has
none), and the axes go in NumPy's order.

A direct DFT costs ``n`` terms per output (``n^2`` per line of the axis), against pocketfft's
``n log n``: fine for the short and batched transforms of signal layers, slow for one long
transform. Its error is that of an ``n``-term f64 sum, far below the result type's rounding for
single precision and within the conformance tolerance for double.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir
import numpy as np

from hlort import dtypes
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.complex_types import make, parts
from hlort.codegen.llvm.conversions import convert_real
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import F64, load_element, store_element
from hlort.codegen.llvm.loops import emit_loop
from hlort.dtypes import DType
from hlort.ir.attributes import FftType
from hlort.ir.instruction import Instruction

BLOCK = 256
MAX_BLOCKS = 4096
MAX_LENGTH = 1 << 14  # a twiddle table of 256 KiB; longer transforms stay host fallbacks


@dataclass(frozen=True)
class FftPass:
    """One axis: ``in_dims`` -> ``out_dims`` (they differ only on ``axis``); ``n`` is the
    transform length; ``mode`` is "complex", "real_forward" or "real_inverse"."""

    in_dims: tuple[int, ...]
    out_dims: tuple[int, ...]
    axis: int
    n: int
    mode: str
    inverse: bool
    in_dtype: DType
    out_dtype: DType

    @property
    def outer(self) -> int:
        return math.prod(self.out_dims[: self.axis])

    @property
    def inner(self) -> int:
        return math.prod(self.out_dims[self.axis + 1 :])


@dataclass(frozen=True)
class FftPlan:
    passes: tuple[FftPass, ...]

    @property
    def scratch_bytes(self) -> tuple[int, ...]:
        """Complex f64 buffers between passes (two, used in turn, once there are three)."""
        sizes = [max(1, math.prod(p.out_dims)) * 16 for p in self.passes[:-1]]
        if len(sizes) <= 1:
            return tuple(sizes)
        return (max(sizes[0::2]), max(sizes[1::2]))


def plan_fft(instr: Instruction) -> tuple[FftPlan | None, str]:
    (x,) = (o.shape for o in instr.operands)
    out = instr.shape
    if not (x.is_array and out.is_array):
        return None, "its operand or result is not an array"
    kind = instr.attrs["fft_type"]
    length = tuple(int(n) for n in instr.attrs["fft_length"])
    if not length or min(length) < 1:
        return None, f"fft_length {length} has no transform to compute"
    if max(length) > MAX_LENGTH:
        return None, f"a transform longer than {MAX_LENGTH} (the direct DFT's twiddle table)"
    rank = len(out.dims)
    axes = list(range(rank - len(length), rank))
    work = dtypes.C128
    passes = []
    dims = list(x.dims)
    if kind in (FftType.FFT, FftType.IFFT):  # numpy.fft's orders (module docstring)
        order = [(a, "complex") for a in reversed(axes)]
    elif kind is FftType.RFFT:
        order = [(axes[-1], "real_forward")] + [(a, "complex") for a in reversed(axes[:-1])]
    else:
        order = [(a, "complex") for a in axes[:-1]] + [(axes[-1], "real_inverse")]
    inverse = kind in (FftType.IFFT, FftType.IRFFT)
    for k, (axis, mode) in enumerate(order):
        n = length[axis - axes[0]]
        new = list(dims)
        new[axis] = n // 2 + 1 if mode == "real_forward" else n
        last = k == len(order) - 1
        passes.append(
            FftPass(
                tuple(dims),
                tuple(new),
                axis,
                n,
                mode,
                inverse,
                x.dtype if k == 0 else work,
                out.dtype if last else work,
            )
        )
        dims = new
    if tuple(dims) != tuple(out.dims):
        return None, f"its passes make {tuple(dims)}, not the result's {out.dims}"
    return FftPlan(tuple(passes)), ""


def _load_complex(ctx, dtype: DType, base: ir.Value, at: ir.Value) -> tuple[ir.Value, ir.Value]:
    b = ctx.b
    value = load_element(b, dtype, base, at)
    if not dtype.is_complex:
        return convert_real(ctx, value, dtype, dtypes.F64), ir.Constant(F64, 0.0)
    re, im = parts(b, value)
    if dtype is dtypes.C64:
        re, im = b.fpext(re, F64), b.fpext(im, F64)
    return re, im


def _store(ctx, dtype: DType, base: ir.Value, at: ir.Value, re: ir.Value, im: ir.Value) -> None:
    b = ctx.b
    if not dtype.is_complex:
        store_element(b, dtype, convert_real(ctx, re, dtypes.F64, dtype), base, at)
        return
    if dtype is dtypes.C64:
        re, im = b.fptrunc(re, ir.FloatType()), b.fptrunc(im, ir.FloatType())
    store_element(b, dtype, make(b, re, im), base, at)


def _twiddles(ctx, n: int) -> ir.GlobalVariable:
    """cos and sin of 2 pi r / n for r < n, interleaved (NumPy's f64 values; the quarter turns
    exact), in global memory (constant memory is 64 KiB on NVIDIA GPUs, too small for long
    transforms)."""
    name = f"hlort_fft_twiddles_{n}"
    existing = ctx.module.globals.get(name)
    if existing is not None:
        return existing
    r = np.arange(n)
    angle = 2.0 * np.pi * r / n
    pairs = np.stack([np.cos(angle), np.sin(angle)], axis=1)
    quarter = (4 * r) % n == 0  # 1, i, -1, -i exactly, as pocketfft has them
    pairs[quarter] = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])[
        (4 * r[quarter]) // n
    ]
    values = pairs.reshape(-1)
    ty = ir.ArrayType(F64, 2 * n)
    table = ir.GlobalVariable(
        ctx.module, ty, name, addrspace=ctx.target.address_spaces.global_memory
    )
    table.global_constant = True
    table.linkage = "internal"
    table.align = 64
    table.initializer = ir.Constant(ty, [ir.Constant(F64, float(v)) for v in values])
    return table


def _rotate(b, xr, xi, wr, wi) -> tuple[ir.Value, ir.Value]:
    """x w, where a twiddle part that is exactly zero (the quarter turns 1, i, -1, -i: the
    table's only zeros) multiplies nothing: an infinite part of x times it would be NaN, where
    pocketfft's butterflies rotate by a quarter turn exactly (module docstring)."""
    rr, ii = b.fmul(xr, wr), b.fmul(xi, wi)
    ri, ir_ = b.fmul(xr, wi), b.fmul(xi, wr)
    wr_zero = b.fcmp_ordered("==", wr, ir.Constant(F64, 0.0))
    wi_zero = b.fcmp_ordered("==", wi, ir.Constant(F64, 0.0))
    pr = b.select(wi_zero, rr, b.select(wr_zero, b.fneg(ii), b.fsub(rr, ii)))
    pi = b.select(wi_zero, ir_, b.select(wr_zero, ri, b.fadd(ri, ir_)))
    return pr, pi


def emit_fft_pass(
    target: GpuTarget, entry: KernelEntry, step: FftPass, src: ir.Value, dst: ir.Value
) -> LaunchShape:
    """One pass of an FFT plan: ``src`` (of ``step.in_dtype``) to ``dst`` (``out_dtype``)."""
    b, ctx = entry.builder, entry.ctx
    total = math.prod(step.out_dims)
    launch = LaunchShape.for_elements(max(total, 1), BLOCK, MAX_BLOCKS)
    n, inner, n_in = step.n, step.inner, step.in_dims[step.axis]
    n_out = step.out_dims[step.axis]
    table = _twiddles(ctx, n)
    sign = 1.0 if step.inverse else -1.0
    acc_re, acc_im = ctx.alloca(F64), ctx.alloca(F64)
    zero = ir.Constant(F64, 0.0)

    def twiddle(r: ir.Value) -> tuple[ir.Value, ir.Value]:
        at = b.mul(r, i64(2))
        c, s = (
            b.load(b.gep(table, [i64(0), p], inbounds=True, source_etype=table.value_type), typ=F64)
            for p in (at, b.add(at, i64(1)))
        )
        return c, b.fmul(ir.Constant(F64, sign), s)

    def output(t: ir.Value) -> None:
        outer = b.udiv(t, i64(n_out * inner))
        k = b.urem(b.udiv(t, i64(inner)), i64(n_out))
        rest = b.urem(t, i64(inner))
        line = b.add(b.mul(outer, i64(n_in * inner)), rest)
        b.store(zero, acc_re)
        b.store(zero, acc_im)

        def term(j: ir.Value, weight: float = 1.0, real_only: bool = False) -> None:
            xr, xi = _load_complex(ctx, step.in_dtype, src, b.add(line, b.mul(j, i64(inner))))
            wr, wi = twiddle(b.urem(b.mul(j, k), i64(n)))
            if real_only:  # the zero and Nyquist bins of a real signal's spectrum
                pr, pi = b.fmul(xr, wr), zero
            else:
                pr, pi = _rotate(b, xr, xi, wr, wi)
            if weight != 1.0:
                pr, pi = b.fmul(pr, ir.Constant(F64, weight)), b.fmul(pi, ir.Constant(F64, weight))
            b.store(b.fadd(b.load(acc_re, typ=F64), pr), acc_re)
            b.store(b.fadd(b.load(acc_im, typ=F64), pi), acc_im)

        if step.mode == "real_inverse":
            term(i64(0), real_only=True)
            top = (n + 1) // 2  # bins 1 .. top-1 stand for themselves and their conjugates
            emit_loop(b, i64(1), i64(top), lambda j: term(j, 2.0), "bins")
            if n % 2 == 0 and n > 0:
                term(i64(n // 2), real_only=True)
        else:
            emit_loop(b, i64(0), i64(min(n, n_in)), term, "terms")
        re, im = b.load(acc_re, typ=F64), b.load(acc_im, typ=F64)
        if step.inverse:
            scale = ir.Constant(F64, 1.0 / n)
            re, im = b.fmul(re, scale), b.fmul(im, scale)
        _store(ctx, step.out_dtype, dst, t, re, im)

    if total:
        start = grid_stride_start(target, b, launch)
        _grid_stride(b, start, i64(total), i64(launch.threads), output, "outputs")
    b.ret_void()
    return launch


__all__ = ["FftPass", "FftPlan", "emit_fft_pass", "plan_fft"]
