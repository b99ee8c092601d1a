"""Large float convolutions as im2col + one gemm (the cuBLAS / rocBLAS call, else the dot kernel).

The direct kernel (conv_schedule.py) gives each output element one thread that walks its whole
window and reads the kernel ``K`` times per output with no reuse: fine for small layers, slow
for a CNN's big ones. For those, a first kernel writes the patch matrix ``col[M, K]`` (one
thread per element, grid-stride): row ``r`` is an output position (the output's dimensions
other than its feature dimension, row-major in the output's order), column ``kk`` a kernel
position (the kernel's dimensions other than its output feature dimension, row-major in the
kernel's order: a tap per spatial dimension and an input feature), the element the input value
that tap multiplies there (its bits, copied), or +0 where it falls in padding or between
base-dilated elements, as the direct kernel reads it (strides, padding, negative padding, base
and window dilation, window reversal). Then ``out[M, O] = col[M, K] @ kernel[K, O]``: the
kernel and the output are those matrices as they lie when their output-feature dimension is
their last one, so the gemm writes the result in place, with no copies.

When (``plan_im2col``): f16, bf16 or f32 operands of one type (the result that type or f32, as
a gemm computes), one feature group and one batch group, output features last in the kernel
and in the output, and a large layer: ``K >= MIN_K`` (64: the direct kernel's per-thread
loop; below it the window is too small for a gemm to pay) and ``M * O * K >= MIN_MACS`` (2^24
multiply-adds), with ``col`` at most ``MAX_COL_BYTES`` (1 GiB). Everything else stays direct.

Rounding: the dot kernel (no library) sums ``k`` in order from +0 with rounded products in
f32, as the direct kernel sums taps; where the kernel's ``k`` order is the direct kernel's
(spatial taps in order, then the input feature, no reversal: HWIO) the two are bit for bit
identical; a library gemm (blocked, fused sums) agrees within the conformance suite's
``accumulate`` tolerance, as every long float dot does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort import dtypes
from hlort.codegen.gpu.conv_schedule import ConvPlan
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.gpu.program import GemmSpec
from hlort.codegen.llvm.index import delinearize, i64, linearize
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.ir.attributes import DotDimensionNumbers
from hlort.ir.instruction import Instruction
from hlort.ir.opcodes import Opcode
from hlort.shape import ArrayShape

MIN_K = 64
MIN_MACS = 1 << 24
MAX_COL_BYTES = 1 << 30
GEMM_TYPES = (dtypes.F16, dtypes.BF16, dtypes.F32)
BLOCK = 256
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class Im2colPlan:
    conv: ConvPlan
    m: int  # output positions
    k: int  # kernel positions
    o: int  # output features

    @property
    def col_bytes(self) -> int:
        return self.m * self.k * self.conv.lhs_dtype.itemsize

    def gemm(self) -> GemmSpec:
        c = self.conv
        names = (c.lhs_dtype.name, c.rhs_dtype.name, c.out_dtype.name)
        return GemmSpec(self.m, self.o, self.k, 1, *names, compute_dtype="f32")

    def dot(self) -> Instruction:
        """The dot the gemm computes, on detached parameters of the two matrices' shapes (for
        the dot kernel when the runtime has no library)."""
        c = self.conv
        col = ArrayShape(c.lhs_dtype, (self.m, self.k))
        kernel = ArrayShape(c.rhs_dtype, (self.k, self.o))
        params = [
            Instruction(Opcode.PARAMETER, s, (), name=f"p{i}", parameter_number=i)
            for i, s in enumerate((col, kernel))
        ]
        dn = DotDimensionNumbers(lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
        out = ArrayShape(c.out_dtype, (self.m, self.o))
        return Instruction(Opcode.DOT, out, params, {"dot_dimension_numbers": dn})


def plan_im2col(conv: ConvPlan) -> tuple[Im2colPlan | None, str]:
    """(plan, "") when the size rule above picks im2col + gemm, else (None, why direct)."""
    dn = conv.dn
    if conv.lhs_dtype not in GEMM_TYPES or conv.rhs_dtype is not conv.lhs_dtype:
        return None, f"{conv.lhs_dtype} x {conv.rhs_dtype} is no f16/bf16/f32 gemm"
    if conv.out_dtype not in (conv.lhs_dtype, dtypes.F32):
        return None, f"a gemm gives no {conv.out_dtype} from {conv.lhs_dtype}"
    if conv.groups != 1 or conv.batch_groups != 1:
        return None, "feature or batch groups"
    last_out, last_kernel = len(conv.out_dims) - 1, len(conv.rhs_dims) - 1
    if dn.output_feature_dimension != last_out or dn.kernel_output_feature_dimension != last_kernel:
        return None, "output features are not the last dimension of the kernel and the output"
    if math.prod(conv.lhs_dims) == 0:
        return None, "an empty input (the direct kernel sums its padding without reading it)"
    o = conv.out_dims[-1]
    m = math.prod(conv.out_dims[:-1])
    k = math.prod(conv.rhs_dims[:-1])
    plan = Im2colPlan(conv, m, k, o)
    if k < MIN_K or m * o * k < MIN_MACS:
        return None, f"a small layer (K = {k}, {m * o * k} multiply-adds)"
    if plan.col_bytes > MAX_COL_BYTES:
        return None, f"a patch matrix of {plan.col_bytes} bytes"
    return plan, ""


def emit_im2col_kernel(target: GpuTarget, entry: KernelEntry, plan: Im2colPlan) -> LaunchShape:
    """Arguments: the convolution's input, then ``col``."""
    lhs, col = entry.buffers[:2]
    b = entry.builder
    c = plan.conv
    dn, window = c.dn, c.window
    total = plan.m * plan.k
    launch = LaunchShape.for_elements(max(total, 1), BLOCK, MAX_BLOCKS)
    bits = ir.IntType(8 * c.lhs_dtype.itemsize)  # elements move as their bits; +0.0 is 0
    zero = ir.Constant(bits, 0)
    start = grid_stride_start(target, b, launch)

    def element(t: ir.Value) -> None:
        r, kk = b.udiv(t, i64(plan.k)), b.urem(t, i64(plan.k))
        # digits of every dimension but the (last) feature one, indexed by dimension
        out_digits = delinearize(b, r, c.out_dims[:-1])
        ker_digits = delinearize(b, kk, c.rhs_dims[:-1])
        multi = [i64(0)] * len(c.lhs_dims)
        multi[dn.input_batch_dimension] = out_digits[dn.output_batch_dimension]
        multi[dn.input_feature_dimension] = ker_digits[dn.kernel_input_feature_dimension]
        valid = None
        for s, w in enumerate(window):
            tap = ker_digits[dn.kernel_spatial_dimensions[s]]
            ws = b.sub(i64(w.size - 1), tap) if w.window_reversal else tap
            spatial = out_digits[dn.output_spatial_dimensions[s]]
            pos = b.sub(
                b.add(b.mul(spatial, i64(w.stride)), b.mul(ws, i64(w.window_dilation))),
                i64(w.padding_low),
            )
            extent = (c.lhs_dims[dn.input_spatial_dimensions[s]] - 1) * w.base_dilation + 1
            ok = b.and_(b.icmp_signed(">=", pos, i64(0)), b.icmp_signed("<", pos, i64(extent)))
            if w.base_dilation > 1:
                ok = b.and_(ok, b.icmp_signed("==", b.srem(pos, i64(w.base_dilation)), i64(0)))
                pos = b.sdiv(pos, i64(w.base_dilation))
            multi[dn.input_spatial_dimensions[s]] = pos
            valid = ok if valid is None else b.and_(valid, ok)
        at = linearize(b, multi, c.lhs_dims)
        if valid is not None:
            at = b.select(valid, at, i64(0))
        x = b.load(b.gep(lhs, [at], inbounds=True, source_etype=bits), typ=bits)
        if valid is not None:
            x = b.select(valid, x, zero)
        b.store(x, b.gep(col, [t], inbounds=True, source_etype=bits))

    if total:
        _grid_stride(b, start, i64(total), i64(launch.threads), element, "patches")
    b.ret_void()
    return launch


__all__ = ["MIN_K", "MIN_MACS", "Im2colPlan", "emit_im2col_kernel", "plan_im2col"]
