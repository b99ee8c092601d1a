"""Select-and-scatter on the GPU: one thread per output element, gathering instead of scattering.

The interpreter (interpreter/ops/reduce_window.py) selects one operand position per source
window (positions walked in row-major order: the first real one is selected, a later candidate
replaces it unless ``select(selected, candidate)``; a window of only padding selects nothing),
then applies ``out[chosen] = scatter(source, out[chosen])`` window after window in row-major
order, from the init value. Windows overlap, so scattering in parallel would race; instead the
thread of output element ``p`` walks the windows that contain ``p``, in row-major order of the
window (each window position ``k`` of a dimension, taken from the last to the first, gives the
windows in increasing order), redoes each one's selection, and combines the source values of
those that chose ``p``. Every output then sees exactly the interpreter's sequence of scatter
calls: bit for bit, any select and scatter computations, no atomics. The price is a window
search per window containing ``p`` (``window_size^2`` compares per output for a pooling).
Base dilation, window dilation, strides and padding (negative too) go into both index maps:
operand element ``p`` lies at ``p * base_dilation`` of the dilated, padded operand, which
window ``s`` covers at tap ``k`` where ``s * stride + k * window_dilation - padding_low`` is it.
"""

from __future__ import annotations

import math

import llvmlite.ir as ir

from hlort.codegen.gpu.flat_scalar_code import flat_scalar_code
from hlort.codegen.gpu.gpu_target import GpuTarget
from hlort.codegen.gpu.launch import LaunchShape, grid_stride_start
from hlort.codegen.gpu.loop_schedule import _grid_stride
from hlort.codegen.llvm.fused_emitter import FusedEmitter, emit_scalar_computation
from hlort.codegen.llvm.index import Index, delinearize, i64, linearize
from hlort.codegen.llvm.kernel_abi import KernelEntry
from hlort.codegen.llvm.llvm_types import (
    I64,
    constant,
    is_compiled_dtype,
    store_element,
    value_type,
)
from hlort.codegen.llvm.loops import emit_nest
from hlort.codegen.llvm.window_index import emit_if, window_axes, window_positions
from hlort.ir.computation import Computation
from hlort.ir.instruction import Instruction

BLOCK = 256
MAX_BLOCKS = 4096


def plan_select_and_scatter(instr: Instruction) -> str:
    """ "" when the kernel computes ``instr``, else why it stays a host fallback."""
    if not all(o.shape.is_array for o in instr.operands) or not instr.shape.is_array:
        return "its operands or result are not arrays"
    if not all(is_compiled_dtype(o.shape.dtype) for o in instr.operands):
        return "an element type the GPU emitter does not compile"
    for key in ("select", "scatter"):
        if flat_scalar_code(instr.attrs[key]) is None:
            return f"its {key} computation is not scalar code (a reduce, a loop, ...)"
    return ""


def with_flat_computations(instr: Instruction) -> Instruction:
    """A detached copy of planned ``instr`` whose select and scatter the kernel inlines."""
    attrs = {**instr.attrs}
    for key in ("select", "scatter"):
        attrs[key] = flat_scalar_code(attrs[key])
    return instr.clone_with(attrs=attrs)


def emit_select_and_scatter_kernel(
    target: GpuTarget, entry: KernelEntry, comp: Computation
) -> LaunchShape:
    """Arguments: operand, source, init value, output."""
    root = comp.root
    operand, source, init = root.operands
    select, scatter = root.attrs["select"], root.attrs["scatter"]
    window = root.attrs["window"]
    dims, source_dims = operand.shape.dims, source.shape.dims
    dt, out_dt = operand.shape.dtype, root.shape.dtype
    axes = window_axes(dims, source_dims, window)
    sizes = [w.size for w in window]
    b, ctx = entry.builder, entry.ctx
    em = FusedEmitter(ctx, comp, list(entry.buffers[:3]))
    out = entry.buffers[3]
    total = math.prod(dims)
    launch = LaunchShape.for_elements(max(total, 1), BLOCK, MAX_BLOCKS)
    vt, ot = value_type(dt), value_type(out_dt)
    acc = ctx.alloca(ot)
    chosen, chosen_value = ctx.alloca(I64), ctx.alloca(vt)
    start = grid_stride_start(target, b, launch)

    def selection(s: list[ir.Value]) -> ir.Value:
        """The flat operand index window ``s`` selects, or -1."""
        b.store(i64(-1), chosen)
        b.store(constant(dt, 0), chosen_value)

        def position(ks: list[ir.Value]) -> None:
            em.reset()
            ok, multi = window_positions(b, axes, s, ks)

            def consider() -> None:
                index = Index(b, dims, multi=multi)
                value = em.value(operand, index)
                current = b.load(chosen, typ=I64)
                current_value = b.load(chosen_value, typ=vt)
                keep = emit_scalar_computation(ctx, select, [current_value, value])[0]
                take = b.or_(b.icmp_signed("<", current, i64(0)), b.not_(keep))
                b.store(b.select(take, linearize(b, multi, dims), current), chosen)
                b.store(b.select(take, value, current_value), chosen_value)
                em.reset()

            emit_if(b, ok, consider, "sas_real")

        emit_nest(b, sizes, position, "sas_search")
        return b.load(chosen, typ=I64)

    def output(t: ir.Value) -> None:
        em.reset()
        p = delinearize(b, t, dims)
        b.store(em.value(init, Index.scalar(b)), acc)
        em.reset()

        def window_of(ks: list[ir.Value]) -> None:
            """The window whose position ``size - 1 - k`` (per dimension) is ``p``."""
            valid = None
            s = []
            for d, (w, k) in enumerate(zip(window, ks, strict=True)):
                tap = b.sub(i64(w.size - 1), k)
                at = b.mul(p[d], i64(w.base_dilation)) if w.base_dilation != 1 else p[d]
                num = b.sub(b.add(at, i64(w.padding_low)), b.mul(tap, i64(w.window_dilation)))
                ok = b.icmp_signed(">=", num, i64(0))
                if w.stride > 1:
                    ok = b.and_(ok, b.icmp_signed("==", b.srem(num, i64(w.stride)), i64(0)))
                    num = b.sdiv(num, i64(w.stride))
                ok = b.and_(ok, b.icmp_signed("<", num, i64(source_dims[d])))
                valid = ok if valid is None else b.and_(valid, ok)
                s.append(num)

            def visit() -> None:
                picked = selection(s)

                def combine() -> None:
                    em.reset()
                    src = em.value(source, Index(b, source_dims, multi=s))
                    new = emit_scalar_computation(ctx, scatter, [src, b.load(acc, typ=ot)])[0]
                    b.store(new, acc)
                    em.reset()

                emit_if(b, b.icmp_signed("==", picked, t), combine, "sas_mine")

            emit_if(b, valid, visit, "sas_window")

        emit_nest(b, sizes, window_of, "sas_windows")
        store_element(b, out_dt, b.load(acc, typ=ot), out, t)

    if total and math.prod(source_dims):
        _grid_stride(b, start, i64(total), i64(launch.threads), output, "outputs")
    elif total:
        _grid_stride(
            b, start, i64(total), i64(launch.threads), _fill(b, em, init, out_dt, out), "init"
        )
    b.ret_void()
    return launch


def _fill(b, em, init, out_dt, out):
    def fill(t: ir.Value) -> None:
        em.reset()
        store_element(b, out_dt, em.value(init, Index.scalar(b)), out, t)

    return fill


__all__ = ["emit_select_and_scatter_kernel", "plan_select_and_scatter", "with_flat_computations"]
