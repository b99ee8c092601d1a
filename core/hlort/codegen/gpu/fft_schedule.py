"""FFT on the GPU: mixed-radix Stockham passes in complex f64, one kernel per pass.

The interpreter (hlort.interpreter.ops.fft) runs numpy.fft in complex128 and rounds once. Here
each transformed axis of length ``n`` is factored into radices (``n = r1 * r2 * ...``: its prime
factors up to 13 merged into the fewest radices up to 16, the least terms among those; a larger
prime is one radix of its own, and one above MAX_RADIX makes the axis a Bluestein one,
fft_bluestein.py), and each radix is one pass of the self-sorting Stockham algorithm: with
``span`` the product of the radices before it, the output at axis position ``p = a * span * R +
k * span + b`` is

    y[p] = sum_{r < R} x[j + r * n / R] * w^(r * e),   j = a * span + b,
    e = b * n / (span * R) + k * n / R,                w = exp(-+2 pi i / n),

one thread per output element (grid-stride), summing its ``R`` terms in f64. A single pass
(``R = n``, a prime length) is the direct DFT. The work is ``n * sum(R)`` per line instead of
``n^2``: ``n log n`` for smooth lengths, as pocketfft. The twiddle ``w^m`` comes from a table of
the ``n`` roots that NumPy computes at compile time (quarter turns exact) for ``n <= 16384``,
and for longer axes from two tables of about ``sqrt(n)`` roots each, ``w^m = w^(hi * B) *
w^lo`` (one complex product: an f64 rounding or two, far below any result type's). Products by
the exact roots 1, -1 and +-i are a swap and negations, as in pocketfft's butterflies, so an
infinite input turns into inf, not NaN (``inf * 0``), where pocketfft has inf (for one-pass
lines exactly its pattern; its own multi-pass butterflies can subtract infinities). The
tables live in global memory (constant memory is 64 KiB on NVIDIA GPUs).

The axes follow NumPy's order (which only shows in where inf and NaN inputs end up): FFT / IFFT
transform every trailing axis, the last first (IFFT scales each by 1/n in its last pass); RFFT
is a real forward transform of the last axis, whose last pass keeps only the ``n // 2 + 1``
bins, then complex forward transforms of the others from the last back; IRFFT is complex
inverse transforms of the leading axes, then the real inverse of the last one, whose first pass
reads the half spectrum as the full Hermitian one (bin ``q > n/2`` is the conjugate of ``n -
q``; the imaginary parts of the zero and, for even ``n``, Nyquist bins are ignored, as pocketfft
does) and whose last pass keeps the real part. Passes in between write complex f64 scratch (two
buffers, in turn); the last rounds once to the result type.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field, replace

import llvmlite.ir as ir
import numpy as np

from hlort import dtypes
from hlort.codegen.gpu.fft_bluestein import MAX_LENGTH, chirp_spectrum, convolution_length
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.complex_types import make, parts
from hlort.codegen.llvm.conversions import convert_real
from hlort.codegen.llvm.index import i64
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import F64, I64, load_element, store_element
from hlort.codegen.llvm.loops import emit_loop
from hlort.dtypes import DType
from hlort.ir.attributes import FftType
from hlort.ir.instruction import Instruction

BLOCK = 256
MAX_BLOCKS = 4096
MERGED_RADIX = 16  # small prime factors are merged into radices up to this (radices())
MAX_RADIX = 1 << 14  # an axis with a longer prime factor is a Bluestein one (fft_bluestein.py)
ONE_TABLE = 1 << 14  # longer axes take their twiddles from two short tables


@dataclass(frozen=True)
class FftPass:
    """One Stockham pass over ``axis``: ``in_dims`` -> ``out_dims`` (they differ only on
    ``axis``: the half spectrum of a real transform's first or last pass). ``n`` is the axis's
    transform length, ``radix`` this pass's, ``span`` the product of the radices before it.
    ``hermitian`` (IRFFT's first pass of the real axis) reads the half spectrum as the full one;
    ``scale`` (an inverse axis's last pass) multiplies by 1/n."""

    in_dims: tuple[int, ...]
    out_dims: tuple[int, ...]
    axis: int
    n: int
    radix: int
    span: int
    inverse: bool
    hermitian: bool
    scale: float  # 1/n for an inverse axis's last pass, else 1
    in_dtype: DType
    out_dtype: DType
    chirp: int = 0  # a Bluestein axis's length (fft_bluestein.py), 0 for a plain one
    chirp_inverse: bool = False  # the chirp's sign: the axis's transform is an inverse one
    chirp_in: bool = False  # reads x[q] c[q] for q < chirp, zero after (the first pass)
    chirp_out: bool = False  # multiplies each output by c[p] (the last pass)
    table: bytes | None = field(default=None, compare=False, repr=False)  # B / m, a third arg

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


SMALL_PRIMES = (2, 3, 5, 7, 11, 13)  # the primes that merge into radices up to MERGED_RADIX


def _multiplicity(n: int, p: int) -> int:
    e = 0
    while n % p == 0:
        n //= p
        e += 1
    return e


_GROUPS = tuple(  # each radix up to MERGED_RADIX (all 13-smooth) as its SMALL_PRIMES exponents
    (r, tuple(_multiplicity(r, p) for p in SMALL_PRIMES)) for r in range(MERGED_RADIX, 1, -1)
)


@functools.cache
def radices(n: int) -> tuple[int, ...]:
    """``n``'s factors as radices, largest first: each prime above MERGED_RADIX a radix of its
    own; the small primes merged into the fewest radices up to MERGED_RADIX (the fewest passes:
    each reads and writes the whole array), and among those the least ``sum`` (each output
    sums its pass's radix of terms): 2^9 is 8, 8, 8 (24 terms an output) rather than the
    greedy 16, 16, 2 (34), in the same three passes."""
    exponents = tuple(_multiplicity(n, p) for p in SMALL_PRIMES)
    rest = n // math.prod(p**e for p, e in zip(SMALL_PRIMES, exponents, strict=True))
    large, d = [], 17
    while d * d <= rest:
        while rest % d == 0:
            large.append(d)
            rest //= d
        d += 2
    if rest > 1:
        large.append(rest)
    small = _merged(exponents)[2]
    return tuple(sorted(small + tuple(large), reverse=True)) or (1,)


@functools.cache
def _merged(exponents: tuple[int, ...]) -> tuple[int, int, tuple[int, ...]]:
    """(passes, terms, radices) for the small primes' ``exponents``, the least (passes,
    terms); the radix taking the largest prime left is chosen first (one search per state)."""
    if not any(exponents):
        return 0, 0, ()
    top = max(k for k, e in enumerate(exponents) if e)
    best = None
    for radix, needs in _GROUPS:
        if needs[top] and all(h <= e for h, e in zip(needs, exponents, strict=True)):
            left = tuple(e - h for e, h in zip(exponents, needs, strict=True))
            passes, terms, rest = _merged(left)
            option = (passes + 1, terms + radix, (radix, *rest))
            best = option if best is None or option[:2] < best[:2] else best
    return best


def plan_fft(instr: Instruction) -> tuple[FftPlan | None, str]:
    (x,) = (o.shape for o in instr.operands)
    out = instr.shape
    if not (x.is_array and out.is_array):
        return None, "its operand or result is not an array"
    kind = instr.attrs["fft_type"]
    length = tuple(int(n) for n in instr.attrs["fft_length"])
    if not length or min(length) < 1:
        return None, f"fft_length {length} has no transform to compute"
    if max(length) >= MAX_LENGTH:
        return None, f"fft_length {length} has an axis of {MAX_LENGTH} points or more"
    rank = len(out.dims)
    axes = list(range(rank - len(length), rank))
    if kind in (FftType.FFT, FftType.IFFT):  # numpy.fft's orders (module docstring)
        order = [(a, "complex") for a in reversed(axes)]
    elif kind is FftType.RFFT:
        order = [(axes[-1], "real_forward")] + [(a, "complex") for a in reversed(axes[:-1])]
    else:
        order = [(a, "complex") for a in axes[:-1]] + [(axes[-1], "real_inverse")]
    inverse = kind in (FftType.IFFT, FftType.IRFFT)
    passes: list[FftPass] = []
    dims = list(x.dims)
    for axis, mode in order:
        n = length[axis - axes[0]]
        expected = n // 2 + 1 if mode == "real_inverse" else n
        if dims[axis] != expected:
            return (
                None,
                f"axis {axis} has {dims[axis]} elements where the transform reads {expected}",
            )
        first = FftPass(  # what the axis's first pass reads; the rest comes per pass
            in_dims=tuple(dims),
            out_dims=(),
            axis=axis,
            n=n,
            radix=1,
            span=1,
            inverse=inverse,
            hermitian=mode == "real_inverse",
            scale=1.0,
            in_dtype=x.dtype if not passes else dtypes.C128,
            out_dtype=dtypes.C128,
        )
        n_out = n // 2 + 1 if mode == "real_forward" else n
        scale = 1.0 / n if inverse else 1.0
        if max(radices(n)) <= MAX_RADIX:
            axis_passes = _stockham(first, n, n_out, inverse, scale)
        else:
            axis_passes = _bluestein(first, n, n_out, inverse, scale)
        passes.extend(axis_passes)
        dims = list(axis_passes[-1].out_dims)
    if tuple(dims) != tuple(out.dims):
        return None, f"its passes make {tuple(dims)}, not the result's {out.dims}"
    passes[-1] = replace(passes[-1], out_dtype=out.dtype)
    return FftPlan(tuple(passes)), ""


def _stockham(first: FftPass, n: int, n_out: int, inverse: bool, scale: float) -> list[FftPass]:
    """One pass per radix of ``n`` from ``first``'s input, the last writing ``n_out`` points
    times ``scale``; ``first`` says the axis, the kind of its first read (``hermitian``,
    ``chirp_in``) and the input type."""
    steps, out = radices(n), []
    span, dims = 1, first.in_dims
    for k, radix in enumerate(steps):
        last = k == len(steps) - 1
        new = list(dims)
        new[first.axis] = n_out if last else n
        step = replace(
            first,
            in_dims=tuple(dims),
            out_dims=tuple(new),
            n=n,
            radix=radix,
            span=span,
            inverse=inverse,
            scale=scale if last else 1.0,
        )
        if k:
            step = replace(step, hermitian=False, chirp_in=False, in_dtype=dtypes.C128)
        out.append(step)
        span *= radix
        dims = tuple(new)
    return out


def _bluestein(first: FftPass, n: int, n_out: int, inverse: bool, scale: float) -> list[FftPass]:
    """The length-``n`` axis as a cyclic convolution of length ``m`` (fft_bluestein.py): forward
    passes of ``m`` from the chirped input, the last multiplying by the chirp's spectrum, then
    inverse passes of ``m`` whose last keeps ``n_out`` points times the chirp (and 1/n)."""
    m = convolution_length(n, radices)
    chirped = replace(first, chirp=n, chirp_inverse=inverse, chirp_in=True)
    forward = _stockham(chirped, m, m, False, 1.0)
    table = chirp_spectrum(n, m, inverse, _roots)
    forward[-1] = replace(forward[-1], table=table)
    after = replace(forward[-1], in_dims=forward[-1].out_dims, hermitian=False, chirp_in=False)
    after = replace(after, table=None, in_dtype=dtypes.C128)
    backward = _stockham(after, m, n_out, True, scale)
    backward[-1] = replace(backward[-1], chirp_out=True)
    return forward + backward


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
    """A real ``dtype`` keeps the real part (IRFFT's last pass)."""
    b = ctx.b
    if not dtype.is_complex:
        store_element(b, dtype, convert_real(ctx, re, dtypes.F64, dtype), base, at)
        return
    if dtype is dtypes.C64:
        re, im = b.fptrunc(re, ir.FloatType()), b.fptrunc(im, ir.FloatType())
    store_element(b, dtype, make(b, re, im), base, at)


def _roots(n: int, exponents: np.ndarray) -> np.ndarray:
    """cos and sin of 2 pi m / n for each m, interleaved; quarter turns exact (pocketfft's)."""
    m = exponents % n
    pairs = np.stack([np.cos(2.0 * np.pi * m / n), np.sin(2.0 * np.pi * m / n)], axis=1)
    quarter = (4 * m) % n == 0
    exact = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
    pairs[quarter] = exact[(4 * m[quarter]) // n]
    return pairs.reshape(-1)


def _table(ctx, name: str, values: np.ndarray) -> ir.GlobalVariable:
    existing = ctx.module.globals.get(name)
    if existing is not None:
        return existing
    ty = ir.ArrayType(F64, len(values))
    table = ir.GlobalVariable(
        ctx.module, ty, name, addrspace=ctx.target.address_spaces.global_memory
    )
    table.global_constant = True
    table.linkage = "internal"
    table.align = 64
    table.initializer = ir.Constant(ty, [ir.Constant(F64, float(v)) for v in values])
    return table


def _twiddle_reader(ctx, n: int, inverse: bool):
    """A function ``m -> (cos, +-sin)`` of ``2 pi m / n`` for ``0 <= m < n``."""
    b = ctx.b
    sign = ir.Constant(F64, 1.0 if inverse else -1.0)

    def pair(table: ir.GlobalVariable, at: ir.Value) -> tuple[ir.Value, ir.Value]:
        at = b.mul(at, i64(2))
        return tuple(
            b.load(b.gep(table, [i64(0), p], inbounds=True, source_etype=table.value_type), typ=F64)
            for p in (at, b.add(at, i64(1)))
        )

    if n <= ONE_TABLE:
        table = _table(ctx, f"hlort_fft_twiddles_{n}", _roots(n, np.arange(n)))

        def read(m: ir.Value) -> tuple[ir.Value, ir.Value]:
            c, s = pair(table, m)
            return c, b.fmul(sign, s)

        return read
    shift = math.isqrt(n - 1).bit_length()  # 2^shift >= ceil(sqrt(n))
    low = _table(ctx, f"hlort_fft_twiddles_{n}_lo", _roots(n, np.arange(1 << shift)))
    high_count = -(-n // (1 << shift))
    high = _table(ctx, f"hlort_fft_twiddles_{n}_hi", _roots(n, np.arange(high_count) << shift))

    def read_split(m: ir.Value) -> tuple[ir.Value, ir.Value]:
        hc, hs = pair(high, b.lshr(m, i64(shift)))
        lc, ls = pair(low, b.and_(m, i64((1 << shift) - 1)))
        c = b.fsub(b.fmul(hc, lc), b.fmul(hs, ls))
        s = b.fadd(b.fmul(hc, ls), b.fmul(hs, lc))
        return c, b.fmul(sign, s)

    return read_split


def emit_fft_pass(
    target: GpuTarget,
    entry: KernelEntry,
    step: FftPass,
    src: ir.Value,
    dst: ir.Value,
    table: ir.Value | None = None,
) -> LaunchShape:
    """One Stockham pass of an FFT plan: ``src`` (of ``step.in_dtype``) to ``dst``; ``table``
    (complex f64, one per output position on the axis) when ``step.table`` is set."""
    b, ctx = entry.builder, entry.ctx
    total = math.prod(step.out_dims)
    launch = LaunchShape.for_elements(max(total, 1), BLOCK, MAX_BLOCKS)
    n, radix, span, inner = step.n, step.radix, step.span, step.inner
    n_in, n_out = step.in_dims[step.axis], step.out_dims[step.axis]
    stride = n // radix  # between the terms of one output, along the axis
    twiddle = _twiddle_reader(ctx, n, step.inverse)
    acc_re, acc_im, power = ctx.alloca(F64), ctx.alloca(F64), ctx.alloca(I64)
    zero = ir.Constant(F64, 0.0)

    length = step.chirp or n  # the signal's length: a Bluestein pass's n is the convolution's
    chirp = _twiddle_reader(ctx, 2 * length, step.chirp_inverse) if step.chirp else None

    def chirped(q: ir.Value, re: ir.Value, im: ir.Value) -> tuple[ir.Value, ir.Value]:
        """``(re, im) * c[q]``, ``c[q] = w_2n^(q^2 mod 2n)`` (q < 2^31: q^2 fits in 64 bits)."""
        cr, ci = chirp(b.urem(b.mul(q, q), i64(2 * length)))
        return b.fsub(b.fmul(re, cr), b.fmul(im, ci)), b.fadd(b.fmul(re, ci), b.fmul(im, cr))

    def read(line: ir.Value, q: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Element ``q`` (< length) of the line; the Hermitian extension of a half spectrum."""
        if not step.hermitian:
            return _load_complex(ctx, step.in_dtype, src, b.add(line, b.mul(q, i64(inner))))
        upper = b.icmp_unsigned(">", q, i64(length // 2))
        at = b.select(upper, b.sub(i64(length), q), q)
        re, im = _load_complex(ctx, step.in_dtype, src, b.add(line, b.mul(at, i64(inner))))
        im = b.select(upper, b.fneg(im), im)
        real_bin = b.icmp_unsigned("==", at, i64(0))
        if length % 2 == 0:
            real_bin = b.or_(real_bin, b.icmp_unsigned("==", at, i64(length // 2)))
        return re, b.select(real_bin, zero, im)

    def load(line: ir.Value, q: ir.Value) -> tuple[ir.Value, ir.Value]:
        """Element ``q`` (< n) of this pass's input: a Bluestein first pass reads the chirped
        signal, zero past its end (the index clamped so that no load leaves the line)."""
        if not step.chirp_in:
            return read(line, q)
        inside = b.icmp_unsigned("<", q, i64(length))
        q = b.select(inside, q, i64(0))
        re, im = chirped(q, *read(line, q))
        return b.select(inside, re, zero), b.select(inside, im, zero)

    def rotate(xr: ir.Value, xi: ir.Value, m: ir.Value) -> tuple[ir.Value, ir.Value]:
        """``x * w^m``; by 1, -1 and +-i exactly (a swap and negations, as pocketfft's
        butterflies have it), so an infinite input gives inf where they give inf, not NaN."""
        wr, wi = twiddle(m)
        pr = b.fsub(b.fmul(xr, wr), b.fmul(xi, wi))
        pi = b.fadd(b.fmul(xr, wi), b.fmul(xi, wr))
        turns = 4 if n % 4 == 0 else 2 if n % 2 == 0 else 1  # the exact roots among the n
        exact = b.icmp_unsigned("==", b.urem(m, i64(n // turns)), i64(0))
        quarter = b.udiv(m, i64(n // turns))
        if turns == 1:
            return b.select(exact, xr, pr), b.select(exact, xi, pi)
        if turns == 2:
            quarter = b.mul(quarter, i64(2))
        # w^(q n/4) = (-i)^q forward, i^q inverse; x * -i = (xi, -xr)
        options = [(xr, xi), (xi, b.fneg(xr)), (b.fneg(xr), b.fneg(xi)), (b.fneg(xi), xr)]
        if step.inverse:
            options[1], options[3] = options[3], options[1]
        er, ei = options[3]
        for q in (2, 1, 0):
            pick = b.icmp_unsigned("==", quarter, i64(q))
            er, ei = b.select(pick, options[q][0], er), b.select(pick, options[q][1], ei)
        return b.select(exact, er, pr), b.select(exact, ei, pi)

    def output(t: ir.Value) -> None:
        outer = b.udiv(t, i64(n_out * inner))
        p = b.urem(b.udiv(t, i64(inner)), i64(n_out))
        line = b.add(b.mul(outer, i64(n_in * inner)), b.urem(t, i64(inner)))
        low, k = b.urem(p, i64(span)), b.urem(b.udiv(p, i64(span)), i64(radix))
        j = b.add(b.mul(b.udiv(p, i64(span * radix)), i64(span)), low)
        step_power = b.add(b.mul(low, i64(n // (span * radix))), b.mul(k, i64(stride)))
        b.store(zero, acc_re)
        b.store(zero, acc_im)
        b.store(i64(0), power)

        def term(r: ir.Value) -> None:
            xr, xi = load(line, b.add(j, b.mul(r, i64(stride))))
            m = b.load(power, typ=I64)
            pr, pi = rotate(xr, xi, m)
            b.store(b.fadd(b.load(acc_re, typ=F64), pr), acc_re)
            b.store(b.fadd(b.load(acc_im, typ=F64), pi), acc_im)
            following = b.add(m, step_power)  # (r + 1) * e mod n, both terms < n
            wrapped = b.icmp_unsigned(">=", following, i64(n))
            b.store(b.select(wrapped, b.sub(following, i64(n)), following), power)

        emit_loop(b, i64(0), i64(radix), term, "terms")
        re, im = b.load(acc_re, typ=F64), b.load(acc_im, typ=F64)
        if table is not None:  # the chirp's spectrum: a complex product per output position
            at = b.mul(p, i64(2))
            tr = load_element(b, dtypes.F64, table, at)
            ti = load_element(b, dtypes.F64, table, b.add(at, i64(1)))
            re, im = b.fsub(b.fmul(re, tr), b.fmul(im, ti)), b.fadd(b.fmul(re, ti), b.fmul(im, tr))
        if step.chirp_out:
            re, im = chirped(p, re, im)
        if step.scale != 1.0:
            scale = ir.Constant(F64, step.scale)
            re, im = b.fmul(re, scale), b.fmul(im, scale)
        _store(ctx, step.out_dtype, dst, t, re, im)

    if total:
        start = grid_stride_start(target, b, launch)
        _grid_stride(b, start, i64(total), i64(launch.threads), output, "outputs")
    b.ret_void()
    return launch


__all__ = ["FftPass", "FftPlan", "emit_fft_pass", "plan_fft", "radices"]
