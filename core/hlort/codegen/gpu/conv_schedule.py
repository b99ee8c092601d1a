"""Convolution on the GPU: a direct kernel, one thread per output element (grid-stride).

Any dimension numbers, strides, padding (negative padding crops), base (input) and window
dilation, window reversal, feature groups and batch groups, with the interpreter's group
layout (interpreter/ops/convolution.py): output feature ``o`` belongs to batch group
``o // (G * Og)`` and feature group ``(o // Og) % G``; it reads input batch ``bg * Nb + n`` and
input features ``g * Cg ..``. Each thread sums its window in the interpreter's contraction
order, window positions (row-major) outer and input features inner, products of padding
positions included (a zero times the kernel value, so an infinite or NaN kernel value gives
NaN there as in the interpreter), with the dot's arithmetic (contraction_arith.py: f32 for
narrow floats, f64 when any operand is, i32/i64 wrapping for integers, c64/c128 with the naive
complex product, pred x pred -> pred as the OR of ANDs), then converts once to the result type.
Small real windows therefore round as the interpreter (which sums up to 64 real terms, and any
number of complex ones, in order); longer real ones differ by accumulation rounding only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import llvmlite.ir as ir

from hlort.codegen.gpu.contraction_arith import ContractionArith, accumulation_type
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.index import delinearize, i64, linearize
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import load_element, store_element
from hlort.codegen.llvm.loops import emit_loop
from hlort.dtypes import DType
from hlort.ir.attributes import WindowDim
from hlort.ir.instruction import Instruction

BLOCK = 256
MAX_BLOCKS = 4096


@dataclass(frozen=True)
class ConvPlan:
    lhs_dims: tuple[int, ...]
    rhs_dims: tuple[int, ...]
    out_dims: tuple[int, ...]
    dn: object  # ConvDimensionNumbers
    window: tuple[WindowDim, ...]
    groups: int
    batch_groups: int
    lhs_dtype: DType
    rhs_dtype: DType
    out_dtype: DType
    acc_dtype: DType

    @property
    def in_features_per_group(self) -> int:
        return self.lhs_dims[self.dn.input_feature_dimension] // self.groups

    @property
    def out_features_per_group(self) -> int:
        o = self.out_dims[self.dn.output_feature_dimension]
        return o // (self.groups * self.batch_groups)

    @property
    def out_batch(self) -> int:
        return self.out_dims[self.dn.output_batch_dimension]


def plan_convolution(instr: Instruction) -> tuple[ConvPlan | None, str]:
    lhs, rhs = (o.shape for o in instr.operands)
    out = instr.shape
    if not (lhs.is_array and rhs.is_array and out.is_array):
        return None, "its operands or result are not arrays"
    acc = accumulation_type(lhs.dtype, rhs.dtype, out.dtype)
    dn = instr.attrs["dim_labels"]
    window = tuple(instr.attrs.get("window", ()))
    if len(window) != len(dn.input_spatial_dimensions):
        window = tuple(WindowDim(size=rhs.dims[d]) for d in dn.kernel_spatial_dimensions)
    plan = ConvPlan(
        lhs.dims,
        rhs.dims,
        out.dims,
        dn,
        window,
        instr.attrs.get("feature_group_count", 1),
        instr.attrs.get("batch_group_count", 1),
        lhs.dtype,
        rhs.dtype,
        out.dtype,
        acc,
    )
    return plan, ""


def emit_conv_kernel(target: GpuTarget, entry: KernelEntry, plan: ConvPlan) -> LaunchShape:
    """Arguments: input, kernel, output."""
    lhs, rhs, out = entry.buffers[:3]
    b, ctx = entry.builder, entry.ctx
    total = math.prod(plan.out_dims)
    launch = LaunchShape.for_elements(max(total, 1), BLOCK, MAX_BLOCKS)
    dn, window = plan.dn, plan.window
    arith = ContractionArith(ctx, plan.lhs_dtype, plan.rhs_dtype, plan.out_dtype)
    acc_t, zero = arith.acc_t, arith.zero
    acc = ctx.alloca(acc_t)
    cg, og = plan.in_features_per_group, plan.out_features_per_group
    win_sizes = tuple(w.size for w in window)
    n_win = math.prod(win_sizes)
    # an input with a zero-size spatial dimension still has outputs when padded: each sums
    # padding products 0 * w (NaN for an infinite w, as the interpreter), reading no input
    lhs_empty = math.prod(plan.lhs_dims) == 0
    start = grid_stride_start(target, b, launch)

    def output(t: ir.Value) -> None:
        multi = delinearize(b, t, plan.out_dims)
        nb = multi[dn.output_batch_dimension]
        o = multi[dn.output_feature_dimension]
        spatial = [multi[d] for d in dn.output_spatial_dimensions]
        bg = b.udiv(o, i64(plan.groups * og))
        g = b.urem(b.udiv(o, i64(og)), i64(plan.groups))
        n_in = b.add(b.mul(bg, i64(plan.out_batch)), nb)
        c0 = b.mul(g, i64(cg))
        b.store(zero, acc)

        def position(w_lin: ir.Value) -> None:
            ws = delinearize(b, w_lin, win_sizes) if window else []
            lhs_multi = [i64(0)] * len(plan.lhs_dims)
            rhs_multi = [i64(0)] * len(plan.rhs_dims)
            lhs_multi[dn.input_batch_dimension] = n_in
            rhs_multi[dn.kernel_output_feature_dimension] = o
            valid = None
            for k, w in enumerate(window):
                pos = b.sub(
                    b.add(b.mul(spatial[k], i64(w.stride)), b.mul(ws[k], i64(w.window_dilation))),
                    i64(w.padding_low),
                )
                extent = (plan.lhs_dims[dn.input_spatial_dimensions[k]] - 1) * w.base_dilation + 1
                ok = b.and_(b.icmp_signed(">=", pos, i64(0)), b.icmp_signed("<", pos, i64(extent)))
                if w.base_dilation > 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(pos, i64(w.base_dilation)), i64(0)))
                    pos = b.sdiv(pos, i64(w.base_dilation))
                lhs_multi[dn.input_spatial_dimensions[k]] = pos
                tap = b.sub(i64(w.size - 1), ws[k]) if w.window_reversal else ws[k]
                rhs_multi[dn.kernel_spatial_dimensions[k]] = tap
                valid = ok if valid is None else b.and_(valid, ok)

            def feature(ci: ir.Value) -> None:
                lhs_multi[dn.input_feature_dimension] = b.add(c0, ci)
                rhs_multi[dn.kernel_input_feature_dimension] = ci
                if lhs_empty:  # every tap is padding; element 0 of an empty input is no memory
                    x = zero
                else:
                    at = linearize(b, lhs_multi, plan.lhs_dims)
                    if valid is not None:
                        at = b.select(valid, at, i64(0))
                    x = arith.to_acc(load_element(b, plan.lhs_dtype, lhs, at), plan.lhs_dtype)
                    if valid is not None:
                        x = b.select(valid, x, zero)
                kat = linearize(b, rhs_multi, plan.rhs_dims)
                y = arith.to_acc(load_element(b, plan.rhs_dtype, rhs, kat), plan.rhs_dtype)
                b.store(arith.multiply_add(b.load(acc, typ=acc_t), x, y), acc)

            emit_loop(b, i64(0), i64(cg), feature, "conv_feature")

        emit_loop(b, i64(0), i64(n_win), position, "conv_window")
        result = arith.to_out(b.load(acc, typ=acc_t))
        store_element(b, plan.out_dtype, result, out, t)

    if total:
        _grid_stride(b, start, i64(total), i64(launch.threads), output, "outputs")
    b.ret_void()
    return launch


__all__ = ["ConvPlan", "emit_conv_kernel", "plan_convolution"]
